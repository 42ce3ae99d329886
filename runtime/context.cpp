// The runtime's context: construction, modules, the tape, steps, and the host's answers to the
// driver. Backward passes are autograd.cpp, scopes context_scopes.cpp, error messages
// context_errors.cpp, the table's actions context_hooks.cpp.
#include "runtime/context.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <atomic>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <variant>

#include "driver/driver.hpp"
#include "runtime/autograd.hpp"
#include "runtime/errors.hpp"
#include "statemachine/machine.hpp"
#include "statemachine/observer.hpp"

namespace fp8sm::runtime {

using spec::CaptureId;
using spec::ModuleId;

namespace {
constexpr std::size_t kForwardSlots = 2;   // input, weight
constexpr std::size_t kBackwardSlots = 1;  // grad_output

// Serial numbers are never reused in a process: a context made where another was destroyed
// does not take the old one's tensors as its own.
ContextSerial next_serial() {
  static std::atomic<ContextSerial> last{0};
  return ++last;
}

}  // namespace

Context::Context(Recipe recipe, std::unique_ptr<Backend> backend, spec::Semantics semantics, AmaxReductionGroup* group)
    : life_(std::make_shared<const ContextSerial>(next_serial())),
      recipe_((recipe.validate(), recipe)),
      backend_(std::move(backend)),
      group_(group),
      machine_(std::make_unique<statemachine::Machine>(semantics, static_cast<statemachine::Hooks*>(this))),
      silent_(std::make_unique<statemachine::Observer>()),
      driver_state_(std::make_unique<driver::DriverState<RuntimeTraits>>()),
      driver_(std::make_unique<Driver>(*machine_, *this, *silent_, *driver_state_)) {
  if (!backend_) throw std::invalid_argument("Context: no backend");
  gradients_ = std::make_unique<Gradients>(*backend_);
  new_chain();
}

Context::~Context() = default;

bool Context::grad_enabled() const { return machine_->grad_enabled(); }
bool Context::fp8_enabled() const { return machine_->fp8_enabled(); }
int Context::autocast_depth() const { return machine_->autocast_depth(); }

void Context::log_events(std::vector<FiredEvent>* log) {
  event_log_ = log;
  rows_taken_.clear();
  machine_->record_rows(log != nullptr ? &rows_taken_ : nullptr);
}

// ---- the driver's host ----------------------------------------------------------------------

// Keeps the FP8 regions (an outermost autocast, or a recompute's own) for run_module's check.
void Context::event_fired(const spec::AnyEvent& event, const std::optional<spec::RaisedException>& raised) {
  if (event_log_ != nullptr) {
    event_log_->push_back(FiredEvent{event, raised ? spec::name(raised->kind) : std::string(), rows_taken_});
    rows_taken_.clear();
  }
  if (const auto* enter = std::get_if<spec::AutocastEnter>(&event)) {
    if (raised) return;
    const bool opens_region = enter->recompute_internal || machine_->autocast_depth() == 1;
    autocast_opens_region_.push_back(opens_region);
    if (opens_region) region_runs_.emplace_back();
  } else if (std::holds_alternative<spec::AutocastExit>(event) && !autocast_opens_region_.empty()) {
    if (autocast_opens_region_.back() && !region_runs_.empty()) region_runs_.pop_back();
    autocast_opens_region_.pop_back();
  }
}

// A recompute: the checkpoint's function again, on the same input tensors, so that the
// gradients its recomputed nodes pass back reach them. A reentrant checkpoint's recompute is
// backpropagated next, from its output: that output's gradient is the checkpoint node's. The
// chain is the forward's while the function runs (its Matrix ops read it), and after it as
// before.
driver::Done Context::run_body(const RuntimeTraits::Body& body) {
  const Chain outer = chain_;
  Tensor output;
  try {
    output = run_function(body->function, body->inputs, scopes_.size());
    // A reentrant recompute's output takes the checkpoint node's gradient: it must be the
    // shape the forward returned, or the recompute's backward would fail inside a kernel.
    if (body->output != 0) check_reentrant_recompute(*body, output);
  } catch (...) {
    chain_ = outer;
    throw;
  }
  chain_ = outer;
  if (body->output != 0) {
    if (const Matrix* gradient = gradients_->find(body->output)) gradients_->add(output.id, *gradient);
  }
  return driver::Done::Normally;
}

// A reentrant recompute is backpropagated from its output next, with the checkpoint node's
// gradient: its output must be the forward's shape, and its graph pass backward's checks
// (check_graph). Its forward ran without grad and recorded nothing to check then; a breach now
// is the function's, a CheckpointError (the recompute fails, as when its function throws).
void Context::check_reentrant_recompute(const CheckpointBody& body, const Tensor& output) const {
  const std::string what = "checkpoint: the recompute of a reentrant checkpoint";
  if (output.value.shape() != body.output_shape) {
    throw CheckpointError(fmt::format("{} returned a {} x {} tensor, its forward a {} x {} one: the checkpointed "
                                      "function must compute the same thing when it is run again",
                                      what, output.value.rows, output.value.cols, body.output_shape.rows,
                                      body.output_shape.cols));
  }
  try {
    check_graph(driver_->recording_graph().nodes, output.id, output.value.shape(), nullptr, what);
  } catch (const MisuseError& e) {
    throw CheckpointError(e.what());
  }
}

// The runtime throws every exception of the program (raise()): the driver's operations all
// end normally or throw, never return Raising.
void Context::completes(driver::Done done) {
  if (done == driver::Done::Raising) throw std::logic_error("the driver returned a raise the runtime did not throw");
}

// §3.5 "Saved-tensor slots": after the table let the unpack through, the node takes its
// twin's saved tensors; the twin must be the same kind of node.
void Context::take_twin(NodeFunction& node, const std::shared_ptr<NodeFunction>& twin, std::uint32_t slot,
                        CaptureId capture) {
  if (!twin) throw std::logic_error(fmt::format("checkpoint: slot {} was freed before its unpack", slot));
  if (!node.is_twin(*twin) || node.output_shape != twin->output_shape) {
    throw CheckpointError(fmt::format("checkpoint: the non-reentrant recompute of checkpoint #{} recorded another node at "
                                      "slot {} than its forward did: the checkpointed function must take the same path "
                                      "when it is run again",
                                      capture, slot));
  }
  node.take_saved(*twin);
}

// ---- what the program hands in ---------------------------------------------------------------

void Context::require_own(const Tensor& tensor, const std::string& what) const {
  if (tensor.context != serial()) {
    throw MisuseError(tensor.context == 0
                          ? fmt::format("{}: the tensor was not made by a context (Context::input makes leaves)", what)
                          : fmt::format("{}: tensor #{} belongs to another context (each context numbers its own "
                                        "tensors: the id would name another tensor here)",
                                        what, tensor.id));
  }
}

void Context::require_operand(const Tensor& tensor, const std::string& what) const {
  require_own(tensor, what);
  require_program_value(tensor.value, what);
}

Matrix Context::admit(Matrix value, const std::string& what) const {
  require_program_value(value, what);
  return backend_->to_backend(std::move(value));
}

// ---- modules ------------------------------------------------------------------------------

ModuleId Context::add_module(const std::string& name) {
  if (modules_.size() > 0xFFFF) throw std::length_error("Context: too many modules");
  ModuleState m;
  m.name = name;
  m.forward = backend_->fresh_meta(recipe_.amax_history_len, kForwardSlots);
  m.backward = backend_->fresh_meta(recipe_.amax_history_len, kBackwardSlots);
  modules_.push_back(std::move(m));
  return static_cast<ModuleId>(modules_.size() - 1);
}

ModuleMeta Context::meta(ModuleId m) const {
  const ModuleState& live = modules_.at(m);
  ModuleMeta copy;
  copy.name = live.name;
  copy.forward = live.forward.to_host();
  copy.backward = live.backward.to_host();
  for (const MetaTensors& stashed : live.stash) copy.stash.push_back(stashed.to_host());
  if (live.updated) copy.updated = live.updated->to_host();
  return copy;
}

Tensor Context::run_module(ModuleId m, const std::vector<const Tensor*>& inputs, const ModuleCompute& compute) {
  // The misuse check comes before any event, so that a refused call changes nothing. Whether
  // the run is FP8 is what prepare_forward will read: the innermost autocast's flag.
  if (recipe_.reduce_amax && machine_->fp8_enabled() && !region_runs_.empty() && region_runs_.back().count(m) != 0) {
    throw MisuseError(fmt::format("module '{}' ran twice in one FP8 autocast region while reduce_amax is set: its amax "
                                  "row would mix two casts (TE forbids it; give each use its own module, or set "
                                  "reduce_amax=false)",
                                  modules_[m].name));
  }
  bool fp8 = false;
  completes(driver_->module_forward_begin(m, fp8));
  if (fp8 && !region_runs_.empty()) region_runs_.back().insert(m);
  std::pair<Matrix, std::shared_ptr<NodeFunction>> result;
  try {
    result = compute(fp8);
  } catch (...) {
    completes(driver_->module_forward_failed(m));
    throw;
  }
  const TensorId output = new_tensor();
  connect(*result.second, inputs, result.first, output);
  const bool records = machine_->grad_enabled();  // the driver records the node if grad is on
  completes(driver_->module_forward_end(m, std::move(result.second)));
  if (records) recorded_output_ = output;
  return tensor(std::move(result.first), output);
}

Tensor Context::record_function(Matrix output, const std::vector<const Tensor*>& inputs,
                                std::shared_ptr<NodeFunction> function) {
  const TensorId id = new_tensor();
  connect(*function, inputs, output, id);
  if (machine_->grad_enabled()) recorded_output_ = id;
  const bool saves = function->saves_tensors();
  driver_->function_recorded(std::move(function), saves);
  return tensor(std::move(output), id);
}

void Context::connect(NodeFunction& node, const std::vector<const Tensor*>& inputs, const Matrix& output, TensorId id) {
  node.inputs.clear();
  node.input_shapes.clear();
  for (const Tensor* input : inputs) {
    node.inputs.push_back(input->id);
    node.input_shapes.push_back(input->value.shape());
  }
  node.output = id;
  node.output_shape = output.shape();
}

Tensor Context::input(Matrix value) { return tensor(admit(std::move(value), "Context::input"), new_tensor()); }

Matrix Context::chain_output(Tensor output) {
  if (output.id == recorded_output_) chain_.end = output.id;
  return std::move(output.value);
}

// A new graph's chain starts at a leaf of its own.
void Context::new_chain() {
  chain_.start = chain_.end = new_tensor();
  recorded_output_ = 0;
}

Context::TapeMark Context::mark() const {
  const driver::TapeMark<statemachine::GrowableStorage> now = driver_->mark();
  const auto& nodes = driver_->recording_graph().nodes;
  TapeMark m;
  m.context = serial();
  m.step = steps_ended_;
  m.generation = now.generation;
  m.size = now.size;
  m.last_node = nodes.empty() ? 0 : nodes.back().id;
  m.chain_end = chain_.end;
  return m;
}

void Context::discard_since(const TapeMark& mark) {
  if (mark.context != serial()) {
    throw MisuseError(mark.context == 0 ? "discard_since: a mark not made by mark()"
                                        : "discard_since: a mark of another context");
  }
  if (mark.step != steps_ended_) {
    throw MisuseError("discard_since: the mark was taken in an earlier step (end_step dropped what it named)");
  }
  const driver::TapeMark<statemachine::GrowableStorage> now = driver_->mark();
  if (mark.generation > now.generation) {
    throw MisuseError("discard_since: the mark was taken on a graph that began after the one being recorded (inside "
                      "a recompute, used outside it)");
  }
  const auto& nodes = driver_->recording_graph().nodes;
  const bool same_graph = mark.generation == now.generation;
  if (same_graph && (mark.size > nodes.size() || (mark.size > 0 && nodes[mark.size - 1].id != mark.last_node))) {
    throw MisuseError(fmt::format(
        "discard_since: the mark is past what the graph holds ({} nodes recorded when it was taken, {} now; what it "
        "followed was discarded)",
        mark.size, nodes.size()));
  }
  // A mark of an earlier graph of this step: the driver discards all of the current one.
  completes(driver_->discard_since(driver::TapeMark<statemachine::GrowableStorage>{mark.generation,
                                                                                   static_cast<std::uint32_t>(mark.size)}));
  chain_.end = same_graph ? mark.chain_end : chain_.start;  // what was recorded since is gone from the chain too
}

bool Context::has_recorded() const { return driver_->has_recorded(spec::kCurrentGraph); }
bool Context::in_recompute() const { return driver_->recompute_depth() > 0; }

bool Context::has_recorded(const std::string& tape) const {
  const auto found = tapes_.find(tape);
  return found != tapes_.end() && driver_->has_recorded(found->second);
}

void Context::save_graph(const std::string& tape) {
  if (checkpoints_open_ > 0 || driver_->recompute_depth() > 0) {
    throw MisuseError("save_graph: inside a checkpoint's function (its recompute would save the graph again)");
  }
  auto found = tapes_.find(tape);
  if (found == tapes_.end()) {
    if (tapes_.size() >= spec::kCurrentGraph) throw std::length_error("save_graph: too many tapes");
    found = tapes_.emplace(tape, static_cast<std::uint16_t>(tapes_.size())).first;
  }
  completes(driver_->save(found->second));
  tape_chains_[found->second] = chain_;
  new_chain();
}

StepCounts Context::end_step() {
  if (!scopes_.empty()) {
    throw MisuseError(fmt::format("end_step: the {} scope #{} is still open (a step ends outside every scope)",
                                  scope_name(scopes_.back().kind), scopes_.back().id));
  }
  completes(driver_->end_step());  // what was recorded and never backpropagated
  driver_->forget_unreachable();
  new_chain();
  ++steps_ended_;
  const StepCounts done = counts_;
  counts_ = StepCounts{};
  return done;
}

}  // namespace fp8sm::runtime
