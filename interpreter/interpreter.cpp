#include "statemachine/interpreter.hpp"

#include "statemachine/encoder.hpp"

#include <limits>
#include <stdexcept>
#include <utility>

namespace fp8sm::statemachine {

using spec::Op;
using spec::RaisedException;
using spec::Statement;

namespace {

ModelException user_exception(const char* statement) {
  return ModelException{RaisedException{"UserError", std::string("raised by '") + statement + "'"}};
}

// What torch raises at a node whose saved tensors a backward without retain released.
ModelException graph_already_freed() {
  return ModelException{RaisedException{
      "RuntimeError",
      "Trying to backward through the graph a second time (or directly access saved tensors "
      "after they have already been freed)"}};
}

}  // namespace

Interpreter::Interpreter(spec::Semantics semantics, Observer* observer)
    : observer_(observer != nullptr ? observer : &silent_), machine_(semantics, this) {
  step_graph_.generation = next_generation_++;
  observer_->attach(machine_);
}

Interpreter::Interpreter(const Interpreter& other, Observer* observer)
    : observer_(observer != nullptr ? observer : &silent_),
      machine_(other.machine_),
      log_(other.log_),
      scopes_(other.scopes_),
      base_(other.base_),
      replay_depth_(other.replay_depth_),
      skip_(other.skip_),
      packs_(other.packs_),
      step_graph_(other.step_graph_),
      tapes_(other.tapes_),
      next_generation_(other.next_generation_),
      reentrant_(other.reentrant_),
      frames_(other.frames_),
      next_capture_(other.next_capture_),
      released_(other.released_),
      next_node_(other.next_node_),
      last_claim_owner_(other.last_claim_owner_),
      step_(other.step_),
      step_started_(other.step_started_),
      current_(other.current_),
      steps_(other.steps_) {
  // Only ever copied between statements, when the current graph is the step's.
  machine_.set_hooks(this);
  observer_->attach(machine_);
}

void Interpreter::run(const spec::Program& program) {
  for (const Statement& s : program.statements) feed(s);
  end_of_file();
}

namespace {

void encode_statements(Encoder& out, const std::vector<Statement>& log, std::uint32_t begin, std::uint32_t end) {
  put(out, end - begin, 4);
  for (std::uint32_t i = begin; i < end; ++i) {
    const Statement& s = log[i];
    put(out, static_cast<std::uint64_t>(s.op), 1);
    put(out, s.name, 2);
    put(out, s.retain, 1);
  }
}

// A position in the interpreter's records or frames, or -1 for none.
void put_position(Encoder& out, IdKind kind, int position) {
  if (position < 0) {
    out.put_no_id();
  } else {
    out.put_id(kind, static_cast<std::uint32_t>(position));
  }
}

void encode_graph(Encoder& out, const Graph& graph) {
  out.put_id(IdKind::Generation, graph.generation);
  put(out, graph.freed | (graph.live << 1), 1);
  put(out, graph.nodes.size(), 4);
  for (const Node& n : graph.nodes) {
    put(out, static_cast<std::uint64_t>(n.kind) | (n.fp8 << 1) | (n.owner << 2) | (n.backward_ran << 3) | (n.freed << 4), 1);
    out.put_id(IdKind::Node, n.id);
    put(out, n.module, 2);
    put_position(out, IdKind::Record, n.reentrant);
    put_position(out, IdKind::Frame, n.frame);
    put(out, n.slot, 4);
  }
}

}  // namespace

void Interpreter::encode(Encoder& out) const {
  machine_.encode(out);
  put(out, scopes_.size(), 2);
  for (const Scope& scope : scopes_) {
    put(out, static_cast<std::uint64_t>(scope.op), 1);
    if (spec::is_checkpoint(scope.op)) {
      out.put_id(IdKind::Capture, scope.capture);
    } else {
      out.put_no_id();
    }
    put(out, scope.grad_at_call, 1);
    put_position(out, IdKind::Frame, scope.frame);
    if (scope.op == Op::Try) {
      out.put_id(IdKind::Generation, scope.graph_generation);
    } else {
      out.put_no_id();
    }
    put(out, scope.graph_mark, 4);
    if (spec::is_checkpoint(scope.op)) {
      encode_statements(out, log_, scope.body_begin, static_cast<std::uint32_t>(log_.size()));  // its body so far
    }
  }
  put(out, skip_.active | (skip_.until_step << 1), 1);
  put(out, static_cast<std::uint32_t>(skip_.depth), 4);
  encode_graph(out, step_graph_);
  put(out, tapes_.size(), 2);
  for (const Graph& tape : tapes_) encode_graph(out, tape);
  // Records and frames are named by position (by nodes and scopes): keyed
  // entries, dropped once nothing names them.
  for (std::uint32_t i = 0; i < reentrant_.size(); ++i) {
    const ReentrantRecord& r = reentrant_[i];
    out.begin_keyed(IdKind::Record, i);
    out.put_id(IdKind::Capture, r.capture);
    put(out, r.fp8, 1);
    encode_statements(out, log_, r.body.begin, r.body.end);
    out.end_keyed();
  }
  for (std::uint32_t i = 0; i < frames_.size(); ++i) {
    const NonReentrantFrame& f = frames_[i];
    out.begin_keyed(IdKind::Frame, i);
    out.put_id(IdKind::Capture, f.capture);
    put(out, f.fp8 | (f.closed << 1), 1);
    put(out, static_cast<std::uint32_t>(f.live_nodes), 4);
    put(out, f.slots, 4);
    put(out, f.recomputed.size(), 4);
    for (bool taken : f.recomputed) put(out, taken, 1);
    encode_statements(out, log_, f.body.begin, f.body.end);
    out.end_keyed();
  }
  out.put_id(IdKind::Capture, next_capture_);
  for (CaptureId c = 0; c < released_.size(); ++c) {
    if (!released_[c]) continue;
    out.begin_keyed(IdKind::Capture, c);
    put(out, 2, 1);  // released, beside the machine's entries of c
    out.end_keyed();
  }
  out.put_id(IdKind::Node, next_node_);
  out.put_id(IdKind::Generation, next_generation_);
  put(out, static_cast<std::uint32_t>(step_), 4);
  put(out, step_started_, 1);
  put(out, static_cast<std::uint32_t>(current_.forward_updates), 4);
  put(out, static_cast<std::uint32_t>(current_.backward_updates), 4);
  put(out, current_.raised.size(), 2);
  for (const RaisedException& e : current_.raised) {
    out.append(e.kind);
    put(out, 0, 1);
    out.append(e.message);
    put(out, 0, 1);
  }
}

// ---- feeding statements -----------------------------------------------------------------

void Interpreter::feed(const Statement& s) {
  if (s.op == Op::Step) {
    end_step();
    return;
  }
  if (log_.size() >= std::numeric_limits<std::uint32_t>::max()) {
    throw std::length_error("Interpreter: more than 2^32 - 1 statements");
  }
  const auto at = static_cast<std::uint32_t>(log_.size());
  log_.push_back(s);
  run_statement(at);
}

// One statement of the log, fed at top level or replayed by a recompute. A checkpoint's body
// is its statements as written, the skipped ones too: a recompute may take a path the
// original forward did not (raise original / raise recompute).
void Interpreter::run_statement(std::uint32_t at) {
  const Statement& s = log_[at];
  if (!step_started_) {
    step_started_ = true;
    observer_->step_begin(step_);
  }
  if (skip_.active) {
    skip(s);
    return;
  }
  try {
    execute(s, at);
  } catch (const ModelException& e) {
    unwind(e, at);  // rethrows when a replay's body raised and nothing in it caught
  }
  if (replay_depth_ == 0 && scopes_.empty()) observer_->top_level_statement_done();
}

void Interpreter::end_of_file() {
  if (step_started_) end_step();
}

void Interpreter::skip(const Statement& s) {
  if (spec::opens_block(s.op)) {
    ++skip_.depth;
  } else if (s.op == Op::Close) {
    if (skip_.depth > 0) {
      --skip_.depth;
    } else if (!skip_.until_step) {
      // The close of the `try` that caught the exception.
      scopes_.pop_back();
      skip_ = Skip{};
      if (replay_depth_ == 0 && scopes_.empty()) observer_->top_level_statement_done();
    }
  }
}

void Interpreter::execute(const Statement& s, std::uint32_t at) {
  switch (s.op) {
    case Op::AutocastOn:
    case Op::AutocastOff:
    case Op::CheckpointReentrant:
    case Op::CheckpointNonReentrant:
    case Op::NoGrad:
    case Op::Try:
      open_scope(s, at);
      return;
    case Op::Close:
      close_scope(at);
      return;
    case Op::Linear:
      run_module(s.name);
      return;
    case Op::RaiseAlways:
      throw user_exception("raise always");
    case Op::RaiseOriginal:
      if (replay_depth_ == 0) throw user_exception("raise original");
      return;
    case Op::RaiseRecompute:
      if (replay_depth_ > 0) throw user_exception("raise recompute");
      return;
    case Op::RecomputeUncaptured:
      run_recompute_uncaptured();
      return;
    case Op::Save:
      run_save(s.name);
      return;
    case Op::Backward:
      run_backward(s);
      return;
    case Op::Step:
      return;  // handled by feed
  }
}

// ---- blocks -------------------------------------------------------------------------------

void Interpreter::open_scope(const Statement& s, std::uint32_t at) {
  Scope scope;
  scope.op = s.op;
  scope.body_begin = at + 1;
  switch (s.op) {
    case Op::AutocastOn:
    case Op::AutocastOff:
      fire(spec::AutocastEnter{s.op == Op::AutocastOn, false});
      break;
    case Op::NoGrad:
      fire(spec::GradPush{false});
      break;
    case Op::Try:
      scope.graph_generation = current_graph_->generation;
      scope.graph_mark = current_graph_->nodes.size();
      break;
    case Op::CheckpointReentrant:
      if ((scope.plain = machine_.checkpoint_call_is_plain())) break;
      // §3.5 CKR_FWD: the autograd Function's forward runs with grad off.
      scope.grad_at_call = machine_.grad_enabled();
      scope.capture = next_capture_++;
      fire(spec::GradPush{false, true});
      fire(spec::CheckpointForwardEnter{scope.capture, true});
      observer_->checkpoint_forward_begin(scope.capture);
      break;
    case Op::CheckpointNonReentrant: {
      if ((scope.plain = machine_.checkpoint_call_is_plain())) break;
      // §3.5 NR_FWD: fp8 is read before the body; the body keeps the caller's grad mode. Its
      // saved-tensor hook is the innermost from now until it exits.
      scope.capture = next_capture_++;
      scope.frame = static_cast<int>(frames_.size());
      NonReentrantFrame frame;
      frame.capture = scope.capture;
      frame.fp8 = machine_.fp8_enabled();
      frames_.push_back(frame);
      packs_.push_back(PackTarget{scope.frame, false});
      fire(spec::CheckpointForwardEnter{scope.capture, false});
      observer_->checkpoint_forward_begin(scope.capture);
      break;
    }
    default:
      return;
  }
  scopes_.push_back(scope);
}

void Interpreter::close_scope(std::uint32_t at) {
  Scope scope = scopes_.back();
  scopes_.pop_back();
  exit_scope(scope, false, at);
}

// Leaving a block, normally or while an exception unwinds through it (Python `with` rules:
// every exit runs and sees the exception; none swallows it). Its body ends before `body_end`.
void Interpreter::exit_scope(Scope& scope, bool exceptional, std::uint32_t body_end) {
  switch (scope.op) {
    case Op::AutocastOn:
    case Op::AutocastOff:
      fire_autocast_exit(true);
      break;
    case Op::NoGrad:
      fire(spec::GradPop{});
      break;
    case Op::CheckpointReentrant: {
      if (scope.plain) break;
      fire(spec::CheckpointForwardExit{exceptional});
      fire(spec::GradPop{});
      observer_->checkpoint_forward_end(scope.capture, exceptional);
      if (exceptional || !scope.grad_at_call) {  // no node (nested in a no-grad forward)
        release_checkpoint(scope.capture);
        break;
      }
      ReentrantRecord record;
      record.body = Body{scope.body_begin, body_end};
      record.capture = scope.capture;
      record.fp8 = machine_.fp8_enabled();  // ctx_fp8 is read after the body (§2.4)
      reentrant_.push_back(record);
      Node node;
      node.kind = Node::Kind::Checkpoint;
      node.reentrant = static_cast<int>(reentrant_.size()) - 1;
      record_node(node);  // its save_for_backward goes through the enclosing frame's hook
      break;
    }
    case Op::CheckpointNonReentrant: {
      if (scope.plain) break;
      fire(spec::CheckpointForwardExit{exceptional});
      observer_->checkpoint_forward_end(scope.capture, exceptional);
      packs_.pop_back();
      NonReentrantFrame& frame = frames_[static_cast<std::size_t>(scope.frame)];
      frame.body = Body{scope.body_begin, body_end};
      frame.closed = true;
      // A failed forward's nodes are discarded by whoever catches; one that recorded no node
      // of its own has nothing that could trigger its recompute.
      if (exceptional || frame.live_nodes == 0) release_checkpoint(scope.capture);
      break;
    }
    default:
      break;
  }
}

// An exception raised by the statement at `at`: every block of the current context exits,
// innermost first, until a `try` catches it. Uncaught at top level it ends the step; uncaught
// in a replayed body it propagates out of the recompute.
void Interpreter::unwind(const ModelException& e, std::uint32_t at) {
  int unwound = 0;  // blocks exited here: their closing braces are still to come
  while (scopes_.size() > base_) {
    Scope& scope = scopes_.back();
    if (scope.op == Op::Try) {
      // What the try body recorded is never backpropagated.
      Graph& graph = *current_graph_;
      const std::size_t keep =
          graph.generation == scope.graph_generation ? scope.graph_mark : 0;  // 0: `save` inside
      const std::vector<Node> discarded(graph.nodes.begin() + static_cast<std::ptrdiff_t>(std::min(keep, graph.nodes.size())),
                                        graph.nodes.end());
      graph.nodes.resize(std::min(keep, graph.nodes.size()));
      abandon_nodes(discarded);
      skip_ = Skip{true, false, unwound};
      return;
    }
    Scope popped = scope;
    scopes_.pop_back();
    exit_scope(popped, true, at + 1);
    ++unwound;
  }
  if (replay_depth_ > 0) throw e;
  current_.raised.push_back(e.raised);
  observer_->exception_escaped(e.raised);
  // The step's backward is skipped: what the step recorded (and did not save) is never
  // backpropagated, as if a `try` around the whole step had caught the exception.
  const std::vector<Node> abandoned = std::move(step_graph_.nodes);
  step_graph_.nodes.clear();
  abandon_nodes(abandoned);
  skip_ = Skip{true, true, 0};
}

void Interpreter::end_step() {
  if (!step_started_) observer_->step_begin(step_);
  drop_nodes(step_graph_.nodes);  // the step's graph goes; saved tapes stay
  step_graph_.nodes.clear();
  observer_->step_end(step_);
  steps_.push_back(std::move(current_));
  current_ = spec::StepResult{};
  skip_ = Skip{};
  scopes_.clear();  // already empty: `step` stands outside every block
  step_graph_ = Graph{};
  step_graph_.generation = next_generation_++;
  current_graph_ = &step_graph_;
  ++step_;
  step_started_ = false;
}

// ---- simple statements ----------------------------------------------------------------------

// §3.2: prepare_forward (branch, register, stash or pop), the casts, the claim while an
// autograd node is recorded, end_forward (restore). A failing prepare skips end_forward.
void Interpreter::run_module(spec::ModuleId m) {
  fire(spec::ModulePrepare{m});
  observer_->module_computed(m, replay_depth_ > 0);
  const bool records_node = machine_.grad_enabled();
  last_claim_owner_.reset();
  fire(spec::ModuleClaim{m});
  if (records_node) {
    Node node;
    node.kind = Node::Kind::Module;
    node.module = m;
    node.fp8 = machine_.module(m).fp8;
    node.owner = last_claim_owner_.value_or(false);
    record_node(node);
  }
  fire(spec::ModuleEndForward{m});
}

// §3.7: a recompute context for which no forward was captured, with an empty body.
void Interpreter::run_recompute_uncaptured() {
  const CaptureId never_captured = next_capture_++;
  fire(spec::RecomputeEnter{never_captured});
  observer_->recompute_begin(never_captured);
  fire(spec::RecomputeExit{});
  observer_->recompute_end(never_captured);
}

void Interpreter::run_save(std::uint16_t tape) {
  if (tape >= tapes_.size()) tapes_.resize(tape + 1u);
  if (!tapes_[tape].freed) drop_nodes(tapes_[tape].nodes);  // the tape saved before under this name
  tapes_[tape] = std::move(step_graph_);
  step_graph_ = Graph{};
  step_graph_.generation = next_generation_++;
  current_graph_ = &step_graph_;
}

void Interpreter::run_backward(const Statement& s) {
  Graph* graph = &step_graph_;
  if (s.name != spec::kCurrentGraph) {
    if (s.name >= tapes_.size()) tapes_.resize(s.name + 1u);
    graph = &tapes_[s.name];
  }
  // An empty graph makes an empty pass: the language's backward runs over what was recorded,
  // and the chain's input is taken to require grad (as in TE's tests), so torch would not
  // refuse it either. A graph backpropagated before without retain runs again: torch refuses
  // only at a node whose backward completed then (see backpropagate).
  // The nodes are copied: a recompute may record into other graphs while we walk this one.
  const std::vector<Node> nodes = graph->nodes;
  const bool was_freed = graph->freed;  // its checkpoints were released then
  Graph* kept = graph;  // where the nodes' flags are kept for a later pass
  if (!s.retain) {
    graph->freed = true;
    if (graph == &step_graph_) {  // the step's next statements record a new graph
      step_graph_ = Graph{};
      step_graph_.generation = next_generation_++;
      kept = nullptr;
    }
  }
  observer_->backward_pass_begin();
  fire(spec::BackwardPassBegin{});
  fire(spec::GradPush{false, true});  // the engine runs backward functions with grad off
  try {
    backpropagate(nodes, kept, s.retain);
  } catch (const ModelException&) {
    fire(spec::GradPop{});
    fire(spec::BackwardPassEnd{false});
    observer_->backward_pass_end(false);
    if (!s.retain && !was_freed) drop_nodes(nodes);
    throw;
  }
  fire(spec::GradPop{});
  fire(spec::BackwardPassEnd{true});
  observer_->backward_pass_end(true);
  if (!s.retain && !was_freed) drop_nodes(nodes);
}

// ---- backward engine ----------------------------------------------------------------------

// Visits `nodes` in reverse. `kept`, when given, is the graph they belong to, kept for another
// backward: it remembers which nodes completed their backward, and (without `retain`) which
// ones torch freed. A freed node stops the pass at its turn: a Linear on the first line of its
// backward (the table: TE's AttributeError), else torch's RuntimeError for freed saved tensors.
void Interpreter::backpropagate(const std::vector<Node>& nodes, Graph* kept, bool retain) {
  for (std::size_t i = nodes.size(); i-- > 0;) {
    const Node& node = nodes[i];
    if (node.freed) {
      if (node.kind == Node::Kind::Module) fire(spec::ModuleBackwardBegin{node.module, true});
      throw graph_already_freed();
    }
    auto completed = [&] {
      if (kept == nullptr) return;
      kept->nodes[i].backward_ran = true;
      kept->nodes[i].freed = !retain;
    };
    if (node.kind == Node::Kind::Module) {
      // §3.3: the first line of the backward, then the unpack of what it saved, the gradient
      // casts, and the end of the backward (the update, if it owns it).
      fire(spec::ModuleBackwardBegin{node.module, node.backward_ran});
      unpack_saved(node);
      observer_->module_backward(node.module, node.fp8);
      fire(spec::ModuleBackward{node.module, node.owner, node.fp8});
      completed();
      continue;
    }
    // §3.5 CKR_BWD: the checkpoint function's backward unpacks its saved inputs first, then
    // recomputes the body into a sub-graph of fresh nodes and backpropagates that.
    unpack_saved(node);
    const ReentrantRecord record = reentrant_[static_cast<std::size_t>(node.reentrant)];
    Graph sub_tape;
    sub_tape.generation = next_generation_++;
    try {
      recompute(record.capture, record.fp8, record.body, sub_tape);
    } catch (const ModelException&) {
      abandon_nodes(sub_tape.nodes);  // a failed recompute's graph is never backpropagated
      throw;
    }
    try {
      backpropagate(sub_tape.nodes, nullptr, false);
    } catch (const ModelException&) {
      drop_nodes(sub_tape.nodes);
      throw;
    }
    drop_nodes(sub_tape.nodes);  // torch backpropagates the sub-graph without retaining it
    completed();
  }
}

// §3.5 "Saved-tensor slots": the unpack of what a node saved through a non-reentrant frame's
// hook. The first unpack while the frame holds no recomputed slot recomputes it; the table
// then judges the node's slot (not reached by the recompute, or taken by an earlier unpack).
void Interpreter::unpack_saved(const Node& node) {
  if (node.frame < 0) return;
  const auto at = static_cast<std::size_t>(node.frame);
  if (frames_[at].recomputed.empty()) recompute_frame(node.frame);
  std::vector<bool>& taken = frames_[at].recomputed;
  const bool reached = node.slot < taken.size();
  fire(spec::SavedTensorUnpack{reached, reached && taken[node.slot]});
  if (reached) taken[node.slot] = true;
}

// §3.5 CKR_BWD and NR_RECOMPUTE share one shape: GRAD(on); ARF_ENTER(rc); AC_ENTER(fp8, rc);
// body; AC_EXIT; ARF_EXIT; GRAD pop. The exits run also when the body raises; a failed
// ARF_ENTER has nothing to exit but the grad mode.
void Interpreter::recompute(CaptureId capture, bool fp8, const Body& body, Graph& graph) {
  fire(spec::GradPush{true, true});
  try {
    fire(spec::RecomputeEnter{capture});
  } catch (const ModelException&) {
    fire(spec::GradPop{});
    throw;
  }
  observer_->recompute_begin(capture);
  fire(spec::AutocastEnter{fp8, true});
  auto leave = [&] {
    fire_autocast_exit(false);
    fire(spec::RecomputeExit{});
    observer_->recompute_end(capture);
    fire(spec::GradPop{});
  };
  try {
    replay(body, graph);
  } catch (const ModelException&) {
    leave();
    throw;
  }
  leave();
}

// §3.5 NR_RECOMPUTE: the frame's body alone, with its own fp8, under its recomputation hook:
// what its own nodes save again goes into its `recomputed` slots (a checkpoint nested in the
// body packs into its own new frame). The recompute's graph is never backpropagated.
void Interpreter::recompute_frame(int index) {
  // By index, never by reference: the recompute may add frames.
  const NonReentrantFrame copy = frames_[static_cast<std::size_t>(index)];
  Graph discarded;
  discarded.generation = next_generation_++;
  discarded.live = false;
  packs_.push_back(PackTarget{index, true});
  try {
    recompute(copy.capture, copy.fp8, copy.body, discarded);
  } catch (const ModelException&) {
    packs_.pop_back();
    drop_nodes(discarded.nodes);
    if (!frames_[static_cast<std::size_t>(index)].recomputed.empty()) release_checkpoint(copy.capture);
    throw;
  }
  packs_.pop_back();
  drop_nodes(discarded.nodes);
  // Once it holds recomputed slots, the frame never recomputes again.
  if (!frames_[static_cast<std::size_t>(index)].recomputed.empty()) release_checkpoint(copy.capture);
}

// Runs a checkpoint's body again, recording into `graph`, as its own context: an exception
// no `try` of the body catches leaves the replay.
void Interpreter::replay(const Body& body, Graph& graph) {
  Graph* const outer_graph = current_graph_;
  const std::size_t outer_base = base_;
  current_graph_ = &graph;
  base_ = scopes_.size();
  ++replay_depth_;
  auto restore = [&] {
    --replay_depth_;
    base_ = outer_base;
    current_graph_ = outer_graph;
  };
  try {
    for (std::uint32_t at = body.begin; at < body.end; ++at) run_statement(at);
  } catch (...) {
    restore();
    throw;
  }
  restore();
}

// The node's saved tensor goes through the innermost saved-tensor hook (spec §3.5): into the
// next slot of the frame whose original forward is running, or into a recompute's slots.
void Interpreter::record_node(Node node) {
  node.id = next_node_++;
  if (!packs_.empty()) {
    const PackTarget target = packs_.back();
    NonReentrantFrame& frame = frames_[static_cast<std::size_t>(target.frame)];
    if (target.recompute) {
      frame.recomputed.push_back(false);  // saved again, not yet taken
    } else {
      node.frame = target.frame;
      node.slot = frame.slots++;
      ++frame.live_nodes;
    }
  }
  observer_->node_recorded(node.id, node.module, node.kind == Node::Kind::Module && node.owner,
                           current_graph_->live);
  current_graph_->nodes.push_back(node);
}

void Interpreter::abandon_nodes(const std::vector<Node>& nodes) {
  for (const Node& node : nodes) observer_->node_discarded(node.id);
  drop_nodes(nodes);
}

void Interpreter::drop_nodes(const std::vector<Node>& nodes) {
  for (const Node& node : nodes) {
    if (node.kind == Node::Kind::Checkpoint) {
      release_checkpoint(reentrant_[static_cast<std::size_t>(node.reentrant)].capture);
    }
    if (node.frame >= 0) {
      NonReentrantFrame& frame = frames_[static_cast<std::size_t>(node.frame)];
      if (--frame.live_nodes == 0 && frame.closed) release_checkpoint(frame.capture);
    }
  }
}

void Interpreter::release_checkpoint(CaptureId capture) {
  if (capture >= released_.size()) released_.resize(capture + 1u, false);
  if (released_[capture]) return;
  released_[capture] = true;
  observer_->checkpoint_dropped(capture);
  fire(spec::CheckpointReleased{capture});
}

// ---- events -----------------------------------------------------------------------------------

template <class Event>
void Interpreter::fire(const Event& event) {
  std::optional<RaisedException> raised = machine_.fire(event);
  observer_->event_fired(spec::AnyEvent{event}, raised);
  if (raised) throw ModelException{std::move(*raised)};
}

void Interpreter::fire_autocast_exit(bool user) {
  observer_->autocast_exit_begin(user);
  fire(spec::AutocastExit{});
  observer_->autocast_exit_end();
}

// ---- hooks ------------------------------------------------------------------------------------

void Interpreter::forward_update() {
  ++current_.forward_updates;
  observer_->forward_update();
}
void Interpreter::backward_update() {
  ++current_.backward_updates;
  observer_->backward_update();
}
void Interpreter::discard_forward_amax() { observer_->discard_forward_amax(); }
void Interpreter::registered(ModuleId m) { observer_->registered(m); }
void Interpreter::stash(ModuleId m) { observer_->stash(m); }
void Interpreter::save_for_restore(ModuleId m) { observer_->save_for_restore(m); }
void Interpreter::pop_stash(ModuleId m) { observer_->pop_stash(m); }
void Interpreter::restore(ModuleId m) { observer_->restore(m); }
void Interpreter::stash_for(ModuleId m, CaptureId c) { observer_->stash_for(m, c); }
void Interpreter::replay_stash(ModuleId m, CaptureId c, unsigned occurrence) {
  observer_->replay_stash(m, c, occurrence);
}
void Interpreter::release_stash(CaptureId c) { observer_->release_stash(c); }
void Interpreter::claimed(ModuleId m, bool owner) {
  last_claim_owner_ = owner;
  observer_->claimed(m, owner);
}
void Interpreter::ownership_captured(CaptureId c) { observer_->ownership_captured(c); }
void Interpreter::ownership_installed(CaptureId c) { observer_->ownership_installed(c); }

}  // namespace fp8sm::statemachine
