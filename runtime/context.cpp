#include "runtime/context.hpp"

#include <algorithm>
#include <type_traits>
#include <typeinfo>
#include <utility>

#include "runtime/errors.hpp"

namespace fp8sm::runtime {

using spec::CaptureId;
using spec::ModuleId;

namespace {
constexpr std::size_t kForwardSlots = 2;   // input, weight
constexpr std::size_t kBackwardSlots = 1;  // grad_output

// What the program was doing when the table raised, for StateError's message.
std::string doing(const spec::AutocastEnter&) { return "entering an autocast"; }
std::string doing(const spec::AutocastExit&) { return "leaving an autocast"; }
std::string doing(const spec::GradPush&) { return "changing the grad mode"; }
std::string doing(const spec::GradPop&) { return "restoring the grad mode"; }
std::string doing(const spec::CheckpointForwardEnter& e) { return "entering the forward of checkpoint #" + std::to_string(e.capture); }
std::string doing(const spec::CheckpointForwardExit&) { return "leaving a checkpoint's forward"; }
std::string doing(const spec::RecomputeEnter& e) { return "entering the recompute of checkpoint #" + std::to_string(e.capture); }
std::string doing(const spec::RecomputeExit&) { return "leaving a recompute"; }
std::string doing(const spec::ModulePrepare&) { return "preparing the forward of module"; }
std::string doing(const spec::ModuleClaim&) { return "recording module"; }
std::string doing(const spec::ModuleEndForward&) { return "ending the forward of module"; }
std::string doing(const spec::ModuleBackwardBegin&) { return "beginning the backward of module"; }
std::string doing(const spec::SavedTensorUnpack&) { return "unpacking what a node saved in a non-reentrant checkpoint"; }
std::string doing(const spec::ModuleBackward&) { return "the backward of module"; }
std::string doing(const spec::BackwardPassBegin&) { return "beginning a backward pass"; }
std::string doing(const spec::BackwardPassEnd&) { return "ending a backward pass"; }
std::string doing(const spec::CheckpointReleased& e) { return "releasing checkpoint #" + std::to_string(e.capture); }

// Module events name their module; the others do not.
template <class Event, class = void>
struct NamesModule : std::false_type {};
template <class Event>
struct NamesModule<Event, std::void_t<decltype(std::declval<Event>().module)>> : std::true_type {};
}  // namespace

Context::Context(Recipe recipe, std::unique_ptr<Backend> backend, spec::Semantics semantics, AmaxReductionGroup* group)
    : recipe_((recipe.validate(), recipe)),
      backend_(std::move(backend)),
      group_(group),
      machine_(semantics, this) {
  if (!backend_) throw std::invalid_argument("Context: no backend");
}

Context::~Context() = default;

template <class Event>
void Context::fire(const Event& event) {
  if (event_log_ != nullptr) event_log_->push_back(event);
  std::optional<spec::RaisedException> raised = machine_.fire(event);
  if (raised) {
    std::string what = doing(event);
    if constexpr (NamesModule<Event>::value) what += " '" + modules_.at(event.module).name + "'";
    if (!recomputing_.empty()) what += " in the recompute of checkpoint #" + std::to_string(recomputing_.back());
    throw StateError(raised->kind, raised->message + " (while " + what + ", under the " +
                                       std::string(spec::name(machine_.semantics())) + " semantics)");
  }
}

// ---- modules ------------------------------------------------------------------------------

ModuleId Context::add_module(const std::string& name) {
  if (modules_.size() > 0xFFFF) throw std::length_error("Context: too many modules");
  ModuleMeta m;
  m.name = name;
  m.forward = kernels::ScalingMeta::fresh(recipe_.amax_history_len, kForwardSlots);
  m.backward = kernels::ScalingMeta::fresh(recipe_.amax_history_len, kBackwardSlots);
  modules_.push_back(std::move(m));
  return static_cast<ModuleId>(modules_.size() - 1);
}

Matrix Context::run_module(ModuleId m, const ModuleCompute& compute) {
  // The misuse check comes before any event, so that a refused call changes nothing. Whether
  // the run is FP8 is what prepare_forward will read: the innermost autocast's flag.
  if (recipe_.reduce_amax && machine_.fp8_enabled() && !region_runs_.empty() && region_runs_.back().count(m) != 0) {
    throw MisuseError("module '" + modules_[m].name +
                      "' ran twice in one FP8 autocast region while reduce_amax is set: its amax row would mix "
                      "two casts (TE forbids it; give each use its own module, or set reduce_amax=false)");
  }
  fire(spec::ModulePrepare{m});
  const bool fp8 = machine_.module(m).fp8;
  if (fp8 && !region_runs_.empty()) region_runs_.back().insert(m);
  std::pair<Matrix, std::shared_ptr<NodeFunction>> result;
  try {
    result = compute(fp8);
  } catch (...) {
    fire(spec::ModuleEndForward{m});  // prepare_forward is a context manager: its exit runs
    throw;
  }
  const bool records_node = machine_.grad_enabled();
  last_claim_.reset();
  fire(spec::ModuleClaim{m});
  if (records_node) {
    TapeNode node;
    node.kind = TapeNode::Kind::Module;
    node.module = m;
    node.fp8 = fp8;
    node.owner = last_claim_.value_or(false);
    node.function = std::move(result.second);
    record(std::move(node));
  }
  fire(spec::ModuleEndForward{m});
  return std::move(result.first);
}

void Context::record_function(std::shared_ptr<NodeFunction> function) {
  if (!machine_.grad_enabled()) return;
  TapeNode node;
  node.kind = TapeNode::Kind::Function;
  node.function = std::move(function);
  record(std::move(node));
}

// The node's saved tensors go through the innermost saved-tensor hook (spec §3.5): a frame's
// forward discards them and numbers the slot; a frame's recompute keeps the node's function
// as the slot's twin.
void Context::record(TapeNode node) {
  if (!packs_.empty()) {
    const PackTarget& target = packs_.back();
    Frame& frame = *target.frame;
    if (target.recompute) {
      frame.recomputed.push_back(Frame::Slot{node.function, false});
    } else {
      node.frame = target.frame;
      node.slot = frame.slots++;
      ++frame.live_nodes;
      node.function->drop_saved();
    }
  }
  // A forward after a backward without retain starts a new graph where the freed one was (the
  // model's step graph likewise), so a later save or step end releases what it records.
  current_graph_->freed = false;
  current_graph_->nodes.push_back(std::move(node));
}

// ---- scopes ---------------------------------------------------------------------------------

const char* Context::scope_name(ScopeKind kind) {
  switch (kind) {
    case ScopeKind::Autocast: return "autocast";
    case ScopeKind::NoGrad: return "no_grad";
    case ScopeKind::Checkpoint: return "checkpoint";
  }
  return "scope";
}

std::size_t Context::open_scope(ScopeKind kind) {
  scopes_.push_back(OpenScope{kind, next_scope_});
  if (kind == ScopeKind::Checkpoint) ++checkpoints_open_;
  return next_scope_++;
}

void Context::close_scope(ScopeKind kind, std::size_t id) {
  const auto it = std::find_if(scopes_.begin(), scopes_.end(), [&](const OpenScope& s) { return s.id == id; });
  const std::string which = std::string(scope_name(kind)) + " scope #" + std::to_string(id);
  if (it == scopes_.end()) throw MisuseError(which + " left twice: it is not open (each scope is left once)");
  if (it + 1 != scopes_.end()) {
    throw MisuseError(which + " left out of order: the " + scope_name(scopes_.back().kind) + " scope #" +
                      std::to_string(scopes_.back().id) + " opened inside it is still open (scopes close innermost first)");
  }
  if (kind == ScopeKind::Checkpoint) --checkpoints_open_;
  scopes_.pop_back();
}

void Context::enter_autocast(bool enabled) {
  const bool outermost = machine_.autocast_depth() == 0;
  fire(spec::AutocastEnter{enabled, false});
  if (outermost) region_runs_.emplace_back();
}

void Context::exit_autocast() {
  const bool outermost = machine_.autocast_depth() == 1;
  if (outermost && !region_runs_.empty()) region_runs_.pop_back();
  fire(spec::AutocastExit{});
}

// A reentrant checkpoint's node: its backward recomputes the body with grad on into a graph
// of its own and backpropagates through that (§3.5 CKR_BWD).
class ReentrantNode final : public NodeFunction {
 public:
  ReentrantNode(Context& context, CaptureId capture, bool fp8, CheckpointFunction function, Matrix input)
      : context_(context), capture_(capture), fp8_(fp8), function_(std::move(function)), input_(std::move(input)) {}

  Matrix backward(const Matrix& grad_output) override {
    Graph graph;
    graph.generation = context_.next_generation_++;
    try {
      context_.recompute(capture_, fp8_, function_, input_, graph, Context::PackTarget{});
    } catch (...) {
      context_.drop_nodes(graph.nodes);  // a failed recompute's graph is never backpropagated
      throw;
    }
    Matrix grad;
    try {
      grad = context_.backpropagate(graph.nodes, grad_output, nullptr);
    } catch (...) {
      context_.drop_nodes(graph.nodes);
      throw;
    }
    context_.drop_nodes(graph.nodes);  // torch backpropagates the sub-graph without retaining it
    return grad;
  }
  void drop_saved() override { input_ = Matrix{}; }
  void take_saved(NodeFunction& twin) override { input_ = static_cast<ReentrantNode&>(twin).input_; }
  bool is_twin(const NodeFunction& twin) const override { return dynamic_cast<const ReentrantNode*>(&twin) != nullptr; }

 private:
  Context& context_;
  CaptureId capture_;
  bool fp8_;
  CheckpointFunction function_;
  Matrix input_;
};

// §3.5 CKR_FWD: the autograd Function's forward runs with grad off; ctx_fp8 is read after the
// body; the node is recorded only if grad was on at the call.
Matrix Context::run_reentrant(const CheckpointFunction& function, const Matrix& input) {
  const bool grad_at_call = machine_.grad_enabled();
  const CaptureId capture = next_capture_++;
  fire(spec::GradPush{false, true});
  try {
    fire(spec::CheckpointForwardEnter{capture, true});
  } catch (...) {
    fire(spec::GradPop{});
    throw;
  }
  Matrix output;
  try {
    output = function(input);
  } catch (...) {
    fire(spec::CheckpointForwardExit{true});
    fire(spec::GradPop{});
    release(capture);
    throw;
  }
  fire(spec::CheckpointForwardExit{false});
  fire(spec::GradPop{});
  if (!grad_at_call) {
    release(capture);
    return output;
  }
  TapeNode node;
  node.kind = TapeNode::Kind::Checkpoint;
  node.capture = capture;
  node.fp8 = machine_.fp8_enabled();
  node.function = std::make_shared<ReentrantNode>(*this, capture, node.fp8, function, input);
  record(std::move(node));
  return output;
}

// §3.5 NR_FWD: fp8 is read before the body, which keeps the caller's grad mode; its hook is
// the innermost while the function runs (a non-reentrant checkpoint inside it pushes its own).
Matrix Context::run_non_reentrant(const CheckpointFunction& function, const Matrix& input) {
  auto frame = std::make_shared<Frame>();
  frame->capture = next_capture_++;
  frame->fp8 = machine_.fp8_enabled();
  frame->function = function;
  frame->input = input;
  fire(spec::CheckpointForwardEnter{frame->capture, false});
  packs_.push_back(PackTarget{frame, false});
  Matrix output;
  try {
    output = function(input);
  } catch (...) {
    packs_.pop_back();
    frame->closed = true;
    fire(spec::CheckpointForwardExit{true});
    release(*frame);  // whoever catches discards its nodes
    throw;
  }
  packs_.pop_back();
  frame->closed = true;
  fire(spec::CheckpointForwardExit{false});
  if (frame->live_nodes == 0) release(*frame);  // no node of its own can ever unpack
  return output;
}

void Context::discard_since(const TapeMark& mark) {
  Graph& graph = *current_graph_;
  // A backward since the mark replaced the graph: everything in the new one is discarded.
  const std::size_t keep = graph.generation == mark.generation ? std::min(mark.size, graph.nodes.size()) : 0;
  const std::vector<TapeNode> discarded(graph.nodes.begin() + static_cast<std::ptrdiff_t>(keep), graph.nodes.end());
  graph.nodes.resize(keep);
  drop_nodes(discarded);
}

// ---- backward engine ----------------------------------------------------------------------

Matrix Context::backward(const Matrix& grad_output, bool retain_graph) {
  return run_backward(graph_, grad_output, retain_graph, "backward");
}

Matrix Context::backward(const std::string& tape, const Matrix& grad_output, bool retain_graph) {
  const auto found = tapes_.find(tape);
  if (found == tapes_.end()) throw MisuseError("backward: no graph was saved as '" + tape + "' (save_graph first)");
  return run_backward(found->second, grad_output, retain_graph, "backward of tape '" + tape + "'");
}

bool Context::has_recorded(const std::string& tape) const {
  const auto found = tapes_.find(tape);
  return found != tapes_.end() && !found->second.nodes.empty();
}

void Context::save_graph(const std::string& tape) {
  if (checkpoints_open_ > 0 || !recomputing_.empty()) {
    throw MisuseError("save_graph: inside a checkpoint's function (its recompute would save the graph again)");
  }
  Graph& saved = tapes_[tape];
  if (!saved.freed) drop_nodes(saved.nodes);  // the graph saved before under this name
  saved = std::move(graph_);
  graph_ = Graph{};
  graph_.generation = next_generation_++;
}

Matrix Context::run_backward(Graph& graph, const Matrix& grad_output, bool retain_graph, const std::string& what) {
  if (checkpoints_open_ > 0 || !recomputing_.empty()) {
    throw MisuseError(what + ": inside a checkpoint's function (its recompute would run the backward again)");
  }
  if (graph.nodes.empty()) {
    throw MisuseError(graph.freed ? what + ": the graph was already backpropagated and freed (pass retain_graph "
                                           "to backpropagate it again)"
                                  : what + ": nothing was recorded (run a module with grad enabled first)");
  }
  require_finite(grad_output, what + ": grad_output");
  const std::vector<TapeNode> nodes = graph.nodes;
  Graph* retained = &graph;
  if (!retain_graph) {
    retained = nullptr;
    graph = Graph{};
    graph.freed = true;
    graph.generation = next_generation_++;
  }
  fire(spec::BackwardPassBegin{});
  fire(spec::GradPush{false, true});  // the engine runs backward functions with grad off
  Matrix grad;
  try {
    grad = backpropagate(nodes, grad_output, retained);
  } catch (...) {
    fire(spec::GradPop{});
    fire(spec::BackwardPassEnd{false});
    if (!retain_graph) drop_nodes(nodes);
    throw;
  }
  fire(spec::GradPop{});
  fire(spec::BackwardPassEnd{true});
  if (!retain_graph) drop_nodes(nodes);
  return grad;
}

// `retained`, when given, is the graph `nodes` belong to, kept for another backward: it
// remembers which module nodes completed their backward.
Matrix Context::backpropagate(const std::vector<TapeNode>& nodes, Matrix grad, Graph* retained) {
  for (std::size_t i = nodes.size(); i-- > 0;) {
    const TapeNode& node = nodes[i];
    if (node.kind == TapeNode::Kind::Module) {
      // §3.3: the first line of the backward, the unpack, the gradient casts, then its end.
      fire(spec::ModuleBackwardBegin{node.module, node.backward_ran});
      unpack_saved(node, retained != nullptr);
      grad = node.function->backward(grad);
      fire(spec::ModuleBackward{node.module, node.owner, node.fp8});
      if (retained != nullptr) retained->nodes[i].backward_ran = true;
      continue;
    }
    unpack_saved(node, retained != nullptr);  // a checkpoint's backward unpacks its saved input first
    grad = node.function->backward(grad);
  }
  return grad;
}

// §3.5 "Saved-tensor slots": the first unpack while the frame holds no recomputed slot
// recomputes it; the table judges the slot (not reached, or taken by an earlier unpack); the
// node then takes its twin's saved tensors. TE leaves None behind; the twin stays only when
// the node's graph is retained (`keep`: for fp8sm, whose frame keeps a retained graph's tensors).
void Context::unpack_saved(const TapeNode& node, bool keep) {
  if (!node.frame) return;
  Frame& frame = *node.frame;
  if (frame.recomputed.empty()) recompute_frame(node.frame);
  const bool reached = node.slot < frame.recomputed.size();
  fire(spec::SavedTensorUnpack{reached, reached && frame.recomputed[node.slot].taken});
  Frame::Slot& slot = frame.recomputed.at(node.slot);  // reached: the table raised otherwise
  if (!slot.twin) throw std::logic_error("checkpoint: slot " + std::to_string(node.slot) + " was freed before its unpack");
  if (!node.function->is_twin(*slot.twin)) {
    throw CheckpointError("checkpoint: the non-reentrant recompute of checkpoint #" + std::to_string(frame.capture) +
                          " recorded another node at slot " + std::to_string(node.slot) +
                          " than its forward did: the checkpointed function must take the same path when it is run "
                          "again");
  }
  node.function->take_saved(*slot.twin);
  slot.taken = true;
  if (!keep) slot.twin.reset();
}

// §3.5 CKR_BWD and NR_RECOMPUTE: GRAD(on); ARF_ENTER(rc); AC_ENTER(fp8, rc); body; AC_EXIT;
// ARF_EXIT; GRAD pop. The exits run also when the body raises. The replay is its own context:
// what it records goes into `graph`, what its nodes save through `target` (no hook for a
// reentrant recompute; the frame's recompute hook for a non-reentrant one).
Matrix Context::recompute(CaptureId capture, bool fp8, const CheckpointFunction& function, const Matrix& input,
                          Graph& graph, PackTarget target) {
  fire(spec::GradPush{true, true});
  try {
    fire(spec::RecomputeEnter{capture});
  } catch (...) {
    fire(spec::GradPop{});
    throw;
  }
  fire(spec::AutocastEnter{fp8, true});
  region_runs_.emplace_back();
  Graph* const outer_graph = current_graph_;
  std::vector<PackTarget> outer_packs;
  outer_packs.swap(packs_);
  if (target.frame) packs_.push_back(std::move(target));
  current_graph_ = &graph;
  recomputing_.push_back(capture);
  auto leave = [&] {
    current_graph_ = outer_graph;
    packs_.swap(outer_packs);
    region_runs_.pop_back();
    recomputing_.pop_back();  // before the exits, one of which may raise
    fire(spec::AutocastExit{});
    fire(spec::RecomputeExit{});
    fire(spec::GradPop{});
  };
  Matrix output;
  try {
    output = function(input);
  } catch (...) {
    leave();
    throw;
  }
  leave();
  return output;
}

// §3.5 NR_RECOMPUTE: the frame's function alone, with its own fp8; its graph is never
// backpropagated, its own nodes' functions become the recomputed slots. Once it holds
// recomputed slots, the frame never recomputes again.
void Context::recompute_frame(const std::shared_ptr<Frame>& frame) {
  Graph twins;
  twins.generation = next_generation_++;
  try {
    recompute(frame->capture, frame->fp8, frame->function, frame->input, twins, PackTarget{frame, true});
  } catch (...) {
    drop_nodes(twins.nodes);
    if (!frame->recomputed.empty()) release(*frame);
    throw;
  }
  drop_nodes(twins.nodes);
  if (!frame->recomputed.empty()) release(*frame);
}

void Context::drop_nodes(const std::vector<TapeNode>& nodes) {
  for (const TapeNode& node : nodes) {
    if (node.kind == TapeNode::Kind::Checkpoint) release(node.capture);
    if (node.frame && --node.frame->live_nodes == 0 && node.frame->closed) release(*node.frame);
  }
}

void Context::release(CaptureId capture) {
  if (!released_.insert(capture).second) return;
  fire(spec::CheckpointReleased{capture});
}

void Context::release(Frame& frame) {
  if (frame.released) return;
  frame.released = true;
  frame.function = nullptr;  // nothing can recompute it again: let go of what it holds
  frame.input = Matrix{};
  fire(spec::CheckpointReleased{frame.capture});
}

StepCounts Context::end_step() {
  if (!scopes_.empty()) {
    throw MisuseError(std::string("end_step: the ") + scope_name(scopes_.back().kind) + " scope #" +
                      std::to_string(scopes_.back().id) + " is still open (a step ends outside every scope)");
  }
  drop_nodes(graph_.nodes);  // what was recorded and never backpropagated
  graph_ = Graph{};
  graph_.generation = next_generation_++;
  released_.clear();  // captures are never reused
  const StepCounts done = counts_;
  counts_ = StepCounts{};
  return done;
}

// ---- hooks ------------------------------------------------------------------------------------

void Context::update(bool backward) {
  std::vector<kernels::ScalingMeta*> key;
  for (ModuleId m : registry_) key.push_back(backward ? &modules_[m].backward : &modules_[m].forward);
  backend_->reduce_and_update(key, group_, recipe_.reduce_amax, recipe_.update(backward));
}

void Context::forward_update() {
  ++counts_.forward_updates;
  update(false);
}

void Context::backward_update() {
  ++counts_.backward_updates;
  update(true);
}

void Context::discard_forward_amax() {
  for (ModuleMeta& m : modules_) {
    for (std::size_t slot = 0; slot < m.forward.slots(); ++slot) m.forward.amax(0, slot) = 0.0f;
  }
}

void Context::registered(ModuleId m) { registry_.push_back(m); }
void Context::stash(ModuleId m) { modules_[m].stash.push_back(modules_[m].forward); }
void Context::save_for_restore(ModuleId m) { modules_[m].updated = modules_[m].forward; }

void Context::pop_stash(ModuleId m) {
  ModuleMeta& meta = modules_[m];
  if (meta.stash.empty()) return;  // the table raises IndexError itself
  meta.forward = std::move(meta.stash.front());
  meta.stash.pop_front();
}

void Context::restore(ModuleId m) {
  if (modules_[m].updated) modules_[m].forward = *modules_[m].updated;
}

void Context::stash_for(ModuleId m, CaptureId c) { checkpoint_stash_[c].emplace_back(m, modules_[m].forward); }

void Context::replay_stash(ModuleId m, CaptureId c, unsigned occurrence) {
  unsigned seen = 0;
  for (const auto& [stashed, value] : checkpoint_stash_[c]) {
    if (stashed == m && seen++ == occurrence) {
      modules_[m].forward = value;
      return;
    }
  }
}

void Context::release_stash(CaptureId c) { checkpoint_stash_.erase(c); }
void Context::claimed(ModuleId /*m*/, bool owner) { last_claim_ = owner; }

}  // namespace fp8sm::runtime
