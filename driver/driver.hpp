// The composite operations of spec §3, written once: the sequences of table events that a
// module forward, an autocast or no_grad block, a reentrant or non-reentrant checkpoint, a
// recompute, a backward pass, a `try` and a step end fire, with the autograd tape and the
// checkpoint ledger (records, frames, saved-tensor slots, live counts, releases) they keep.
//
// Two hosts drive it: the scenario interpreter (feeding statements; a checkpoint's body is a
// slice of its statement log) and the runtime's Context (feeding closures and tensors; a body
// is a function and its input). What differs between them is a host's `Traits`:
//
//   struct Traits {
//     using Storage = ...;      // statemachine::GrowableStorage or FlatStorage
//     using Host = ...;         // the class below the driver
//     using NodePayload = ...;  // what a node keeps for its backward (default-constructible)
//     using Body = ...;         // what a checkpoint's recompute runs again
//   };
//
// and the host's answers to the driver (all called on `Traits::Host&`):
//
//   void raise(const spec::AnyEvent* event, spec::RaisedException raised);
//       the table raised while `event` fired (nullptr: torch raised, spec §3.3's freed graph);
//       the host throws it (the runtime) or keeps it as the exception in flight (the model)
//   void event_fired(const spec::AnyEvent&, const std::optional<spec::RaisedException>&);
//   Done run_body(const Body&);               // a recompute: the body again
//   void node_gradient(Node<Traits>&);        // a module or function node's backward computes
//   void drop_saved(NodePayload&);            // a frame's hook discarded what the node saved
//   void take_saved(Node<Traits>&, RecomputedSlot<Traits>&, CaptureId);
//                                             // the unpack takes what the recompute saved
//   void forget_twin(NodePayload&);           // an unpacked slot of a graph not retained
//
// A body stays as long as its record or frame (forget_unreachable): a checkpoint released by
// a failed pass without retain still recomputes when a later pass reaches its node again.
//
// Exceptions of the modelled program travel two ways, with the same effects: as Done::Raising,
// returned by every operation once the host has kept the exception (the model: a raise is a
// good part of what the exhaustive search executes, and unwinding C++ frames was a fifth of
// its time), or as a C++ exception from a host that throws (the runtime's, and any exception
// of its closures). Either way the driver leaves each scope it opened (the exits fire) before
// the exception goes on; an exit that raises replaces it, as in Python. Nothing here is
// specific to one host; nothing that fires a table event lives in either host.
//
// The driver is behaviour only: what it keeps is a DriverState (driver/tape.hpp) that it
// works on, owned by its host or, for the exhaustive search, part of a flat state value that
// the search binds the driver to (bind()). Its lists are the `Traits::Storage`'s.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "driver/done.hpp"
#include "driver/tape.hpp"
#include "spec/events.hpp"
#include "spec/scenario.hpp"
#include "statemachine/machine.hpp"
#include "statemachine/observer.hpp"

namespace fp8sm::driver {

// A place on the tape: the graph then current and how many nodes it held. What is recorded
// after it can be discarded (a `try` that caught an exception).
template <class S>
struct TapeMark {
  typename S::Id generation = 0;
  typename S::Id size = 0;
};

// A checkpoint's original forward in progress (between its begin and its end).
template <class S>
struct CheckpointCall {
  bool plain = false;         // run as a plain call (Machine::checkpoint_call_is_plain): no events
  bool without_arf = false;   // reentrant, its forward without ARF (Machine::reentrant_forward_skips_arf):
                              // its function under no-grad and nothing else
  bool reentrant = true;
  bool records_node = false;  // reentrant: torch records its node only if grad was on at the call
                              // and its input requires grad
  bool input_requires_grad = true;
  typename S::Id capture = statemachine::kNone<S>;  // none for a plain call or one without ARF
  typename S::Id frame = statemachine::kNone<S>;  // non-reentrant: its frame
};

template <class Traits>
class Driver {
 public:
  using S = typename Traits::Storage;
  using Id = typename S::Id;
  static constexpr Id kNone = statemachine::kNone<S>;
  using Host = typename Traits::Host;
  using Body = typename Traits::Body;
  using Payload = typename Traits::NodePayload;
  using NodeT = Node<Traits>;
  using GraphT = Graph<Traits>;
  using Nodes = typename GraphT::Nodes;
  using Record = ReentrantRecord<Traits>;
  using Frame = NonReentrantFrame<Traits>;
  using Slot = RecomputedSlot<Traits>;
  using State = DriverState<Traits>;
  using Machine = statemachine::BasicMachine<S>;
  using Mark = TapeMark<S>;
  using Call = CheckpointCall<S>;

  // `machine`, `host`, `observer` and `state` outlive the driver; the host implements the
  // machine's hooks and passes the claim on (claimed()).
  Driver(Machine& machine, Host& host, statemachine::Observer& observer, State& state)
      : machine_(&machine), host_(&host), observer_(&observer), state_(&state) {}

  // From now on the driver works on `state` (between two operations: no recompute running).
  void bind(State& state) {
    state_ = &state;
    current_graph_ = nullptr;
  }
  State& state() { return *state_; }
  const State& state() const { return *state_; }

  // ---- single events -----------------------------------------------------------------------

  template <class Event>
  Done fire(const Event& event) {
    std::optional<spec::RaisedException> raised = machine_->fire(event);
    const spec::AnyEvent any{event};
    observer_->event_fired(any, raised);
    host_->event_fired(any, raised);
    if (!raised) return Done::Normally;
    host_->raise(&any, *raised);  // a host that throws does not come back
    return Done::Raising;
  }

  Done autocast_enter(bool enabled) { return fire(spec::AutocastEnter{enabled, false}); }
  Done autocast_exit() { return autocast_exit(true); }
  Done grad_push(bool enabled) { return fire(spec::GradPush{enabled}); }
  Done grad_pop() { return fire(spec::GradPop{}); }

  // The machine's hook: the claim just fired made the recorded node the owner or not.
  void claimed(bool owner) { state_->last_claim = owner ? 2 : 1; }

  // ---- a module forward (§3.2) ---------------------------------------------------------------

  // prepare_forward (branch, register, stash or pop); `fp8`: whether its casts are FP8.
  Done module_forward_begin(ModuleId m, bool& fp8) {
    if (fire(spec::ModulePrepare{m}) == Done::Raising) return Done::Raising;
    observer_->module_computed(m, recompute_depth() > 0);
    fp8 = machine_->module(m).fp8;
    return Done::Normally;
  }
  // The casts raised: prepare_forward is a context manager, its exit runs.
  Done module_forward_failed(ModuleId m) { return fire(spec::ModuleEndForward{m}); }
  // The claim while the autograd node is recorded (if grad is on), then end_forward.
  Done module_forward_end(ModuleId m, Payload payload) {
    const bool records_node = machine_->grad_enabled();
    state_->last_claim = 0;
    if (fire(spec::ModuleClaim{m}) == Done::Raising) return Done::Raising;
    if (records_node) {
      NodeT node;
      node.kind = NodeT::Kind::Module;
      node.module = statemachine::to_id<S>(m);
      node.fp8 = machine_->module(m).fp8;
      node.owner = state_->last_claim == 2;
      node.payload = std::move(payload);
      record_node(std::move(node));
    }
    return fire(spec::ModuleEndForward{m});
  }
  // A node without table events of its own (an activation), recorded if grad is on. One that
  // saves no tensor for its backward (a sum) packs nothing through a saved-tensor hook, so it
  // has no slot in a non-reentrant frame and its backward unpacks nothing (torch calls the
  // hooks per saved tensor, not per node).
  void function_recorded(Payload payload, bool saves_tensors = true) {
    if (!machine_->grad_enabled()) return;
    NodeT node;
    node.kind = NodeT::Kind::Function;
    node.payload = std::move(payload);
    record_node(std::move(node), saves_tensors);
  }

  // ---- checkpoints (§3.5) --------------------------------------------------------------------

  // A checkpoint's call. CKR_FWD: the autograd Function's forward runs with grad off. NR_FWD:
  // fp8 is read before the body, which keeps the caller's grad mode; the frame's saved-tensor
  // hook is the innermost until its end. A plain call (spec §3.5 "Dispatch") fires nothing; a
  // reentrant one without ARF (upstream, on an input that does not require grad) only its
  // grad mode. `input_requires_grad`: whether the checkpoint's input requires grad (the
  // scenario language's `data` makes one that does not; the runtime's callers always pass
  // inputs that do, so they leave it true).
  Done checkpoint_begin(bool reentrant, Call& call, bool input_requires_grad = true) {
    call = Call{};
    call.reentrant = reentrant;
    call.input_requires_grad = input_requires_grad;
    call.capture = kNone;
    if ((call.plain = machine_->checkpoint_call_is_plain())) return Done::Normally;  // no capture, no frame
    if (reentrant) {
      // torch's autograd.Function records no node when no input requires grad.
      call.records_node = machine_->grad_enabled() && input_requires_grad;
      if ((call.without_arf = machine_->reentrant_forward_skips_arf(input_requires_grad))) {
        return fire(spec::GradPush{false, true});  // no capture, no node
      }
    }
    call.capture = state_->next_capture;
    state_->next_capture = statemachine::to_id<S>(state_->next_capture + 1u);
    if (reentrant) {
      if (fire(spec::GradPush{false, true}) == Done::Raising) return Done::Raising;
      const Done entered = leaving_on_raise([&] { return fire(spec::CheckpointForwardEnter{call.capture, true}); },
                                            [&] { (void)fire(spec::GradPop{}); });
      if (entered == Done::Raising) return Done::Raising;
    } else {
      call.frame = statemachine::to_id<S>(state_->frames.size());
      Frame frame;
      frame.capture = call.capture;
      frame.fp8 = machine_->fp8_enabled();
      state_->frames.push_back(std::move(frame));
      if (fire(spec::CheckpointForwardEnter{call.capture, false}) == Done::Raising) return Done::Raising;
      state_->packs.push_back(PackTarget<Traits>{call.frame, false});
    }
    observer_->checkpoint_forward_begin(call.capture);
    return Done::Normally;
  }
  // Its forward ends, normally or while an exception unwinds through it (`exceptional`).
  // A reentrant checkpoint records its node (if grad was on at the call); a non-reentrant one
  // that recorded no node of its own, or failed, has nothing that could recompute it.
  // `node_payload` is what the reentrant checkpoint's node keeps.
  Done checkpoint_end(const Call& call, bool exceptional, Body body, Payload node_payload = {}) {
    if (call.plain) return Done::Normally;
    if (call.without_arf) return fire(spec::GradPop{});
    if (call.reentrant) {
      if (fire(spec::CheckpointForwardExit{exceptional}) == Done::Raising) return Done::Raising;
      if (fire(spec::GradPop{}) == Done::Raising) return Done::Raising;
      observer_->checkpoint_forward_end(call.capture, exceptional);
      if (exceptional || !call.records_node) return release_checkpoint(call.capture);  // no node
      Record record;
      record.body = std::move(body);
      record.capture = call.capture;
      record.fp8 = machine_->fp8_enabled();  // ctx_fp8 is read after the body (§2.4)
      state_->records.push_back(std::move(record));
      NodeT node;
      node.kind = NodeT::Kind::Checkpoint;
      node.reentrant = statemachine::to_id<S>(state_->records.size() - 1);
      node.payload = std::move(node_payload);
      record_node(std::move(node));  // its save_for_backward goes through the enclosing frame's hook
      return Done::Normally;
    }
    state_->packs.pop_back();
    Frame& frame = state_->frames[call.frame];
    frame.body = std::move(body);
    frame.closed = true;
    if (fire(spec::CheckpointForwardExit{exceptional}) == Done::Raising) return Done::Raising;
    observer_->checkpoint_forward_end(call.capture, exceptional);
    // A failed forward's nodes are discarded by whoever catches.
    if (exceptional || state_->frames[call.frame].live_nodes == 0) return release_frame(call.frame);
    return Done::Normally;
  }

  // §3.7: a recompute context for which no forward was captured, around nothing.
  Done recompute_uncaptured() {
    const CaptureId never_captured = state_->next_capture;
    state_->next_capture = statemachine::to_id<S>(state_->next_capture + 1u);
    if (fire(spec::RecomputeEnter{never_captured}) == Done::Raising) return Done::Raising;
    observer_->recompute_begin(never_captured);
    if (fire(spec::RecomputeExit{}) == Done::Raising) return Done::Raising;
    observer_->recompute_end(never_captured);
    return Done::Normally;
  }

  // ---- the tape ------------------------------------------------------------------------------

  Mark mark() const {
    const GraphT& graph = current_graph();
    return {graph.generation, statemachine::to_id<S>(graph.nodes.size())};
  }
  // The graph being recorded (the step's, or a recompute's while one runs): the one marks name.
  const GraphT& recording_graph() const { return current_graph(); }
  // What was recorded since `mark` is never backpropagated (a `try` caught an exception, or
  // the program abandoned the step): checkpoints it held are released.
  Done discard_since(const Mark& mark) {
    GraphT& graph = current_graph();
    const std::size_t keep =
        graph.generation == mark.generation ? std::min<std::size_t>(mark.size, graph.nodes.size()) : 0;
    Nodes discarded;
    for (std::size_t i = keep; i < graph.nodes.size(); ++i) discarded.push_back(std::move(graph.nodes[i]));
    graph.nodes.resize(keep);
    return abandon_nodes(discarded);
  }
  // An exception left the step's program: what the step recorded (and did not save) is never
  // backpropagated, as if a `try` around the whole step had caught it.
  Done abandon_step_graph() {
    Nodes abandoned = std::move(state_->step_graph.nodes);
    state_->step_graph.nodes.clear();
    return abandon_nodes(abandoned);
  }
  // The chain restarts from a fresh input (the scenario language's `data`): the graph recorded
  // so far is never backpropagated, as if a `try` around it had caught, and the next forward
  // records a new one (a `try` open around this statement then drops the whole new graph).
  Done restart_graph() {
    Nodes dropped = std::move(state_->step_graph.nodes);
    new_step_graph();
    return abandon_nodes(dropped);
  }
  // Closes the graph recorded so far under `tape` (the tape saved before under that name is
  // dropped); the next forward records a new graph.
  Done save(std::uint16_t tape) {
    GraphT& saved = tape_at(tape);
    if (drop_nodes(saved.nodes) == Done::Raising) return Done::Raising;
    saved = std::move(state_->step_graph);
    new_step_graph();
    return Done::Normally;
  }
  // The step ends: its graph goes; saved tapes stay.
  Done end_step() {
    if (drop_nodes(state_->step_graph.nodes) == Done::Raising) return Done::Raising;
    new_step_graph();
    return Done::Normally;
  }
  bool has_recorded(std::uint16_t tape) const {
    const GraphT* graph = tape == spec::kCurrentGraph
                              ? &state_->step_graph
                              : (tape < state_->tapes.size() ? &state_->tapes[tape] : nullptr);
    return graph != nullptr && !graph->nodes.empty();
  }

  // ---- backward (§3.3, §3.5) -----------------------------------------------------------------

  // One backward pass over the step's graph (`tape` = spec::kCurrentGraph) or a saved tape.
  // An empty graph makes an empty pass. A graph backpropagated before without retain runs
  // again: torch refuses only at a node whose backward completed then.
  Done backward(std::uint16_t tape, bool retain) {
    GraphT* graph = tape == spec::kCurrentGraph ? &state_->step_graph : &tape_at(tape);
    // The nodes are copied: a recompute may record into other graphs while we walk this one.
    // The copy keeps the flags from before the pass (which nodes an earlier pass dropped).
    Nodes nodes = graph->nodes;
    // Where the nodes' flags are kept for a later pass: the step's graph or tape `tape`.
    int kept = tape == spec::kCurrentGraph ? kStepGraph : static_cast<int>(tape);
    if (!retain && graph == &state_->step_graph) {  // the step's next statements record a new graph
      new_step_graph();
      kept = kNoGraph;
    }
    observer_->backward_pass_begin();
    if (fire(spec::BackwardPassBegin{}) == Done::Raising) return Done::Raising;
    if (fire(spec::GradPush{false, true}) == Done::Raising) return Done::Raising;  // grad off in backward functions
    const Done passed = leaving_on_raise([&] { return backpropagate(nodes, kept, retain); },
                                         [&] {
                                           if (fire(spec::GradPop{}) == Done::Raising) return;
                                           if (fire(spec::BackwardPassEnd{false}) == Done::Raising) return;
                                           observer_->backward_pass_end(false);
                                           if (!retain) (void)drop_after_failed_pass(nodes, kept);
                                         });
    if (passed == Done::Raising) return Done::Raising;
    if (fire(spec::GradPop{}) == Done::Raising) return Done::Raising;
    if (fire(spec::BackwardPassEnd{true}) == Done::Raising) return Done::Raising;
    observer_->backward_pass_end(true);
    if (!retain) return drop_nodes(nodes);
    return Done::Normally;
  }

  // ---- what the hosts read -------------------------------------------------------------------

  int recompute_depth() const { return static_cast<int>(state_->recomputing.size()); }
  // The checkpoint whose recompute runs innermost, if any.
  std::optional<CaptureId> innermost_recompute() const {
    if (state_->recomputing.empty()) return std::nullopt;
    return state_->recomputing.back();
  }
  const GraphT& step_graph() const { return state_->step_graph; }
  CaptureId next_capture() const { return state_->next_capture; }

  // Between steps, with no graph but the saved tapes left: records and frames nothing names
  // any more are forgotten (a long-running program's ledger stays as large as its tapes), and
  // so are the released flags below the oldest capture still named. Positions change; ids do
  // not.
  void forget_unreachable() {
    State& st = *state_;
    auto for_each_node = [&](auto&& visit) {
      for (NodeT& node : st.step_graph.nodes) visit(node);
      for (GraphT& graph : st.tapes) {
        for (NodeT& node : graph.nodes) visit(node);
      }
    };
    std::vector<int> record_at(st.records.size(), -1), frame_at(st.frames.size(), -1);
    for_each_node([&](const NodeT& node) {
      if (node.reentrant != kNone) record_at[node.reentrant] = 0;
      if (node.frame != kNone) frame_at[node.frame] = 0;
    });
    compact_frames(frame_at);
    compact(st.records, record_at);
    for_each_node([&](NodeT& node) {
      if (node.reentrant != kNone) node.reentrant = statemachine::to_id<S>(record_at[node.reentrant]);
      if (node.frame != kNone) node.frame = statemachine::to_id<S>(frame_at[node.frame]);
    });
    CaptureId oldest = st.next_capture;
    for (const Record& r : st.records) oldest = std::min<CaptureId>(oldest, r.capture);
    for (const Frame& f : st.frames) oldest = std::min<CaptureId>(oldest, f.capture);
    const std::size_t drop = std::min<std::size_t>(oldest - st.released_base, st.released.size());
    st.released.erase(st.released.begin(), st.released.begin() + static_cast<std::ptrdiff_t>(drop));
    st.released_base = statemachine::to_id<S>(st.released_base + drop);
  }

 private:
  static constexpr int kStepGraph = -1;
  static constexpr int kNoGraph = -2;

  // Runs `operation`; if it raises (as Done::Raising, or as a C++ exception from a host that
  // throws), runs `leave` first (the exits of what it opened), then the exception goes on. An
  // exit that raises replaces it (the host keeps the last; a C++ one propagates instead).
  template <class Operation, class Leave>
  Done leaving_on_raise(Operation&& operation, Leave&& leave) {
    Done done;
    try {
      done = operation();
    } catch (...) {
      leave();
      throw;
    }
    if (done == Done::Raising) leave();
    return done;
  }

  static ModuleId module_of(const NodeT& node) { return static_cast<ModuleId>(node.module); }
  GraphT& current_graph() { return current_graph_ != nullptr ? *current_graph_ : state_->step_graph; }
  const GraphT& current_graph() const { return current_graph_ != nullptr ? *current_graph_ : state_->step_graph; }
  GraphT& tape_at(std::uint16_t tape) {
    if (tape >= state_->tapes.size()) state_->tapes.resize(tape + 1u);
    return state_->tapes[tape];
  }
  GraphT* kept_graph(int kept) {
    if (kept == kNoGraph) return nullptr;
    return kept == kStepGraph ? &state_->step_graph : &state_->tapes[static_cast<std::size_t>(kept)];
  }
  void new_step_graph() {
    state_->step_graph = GraphT{};
    state_->step_graph.generation = state_->next_generation;
    state_->next_generation = statemachine::to_id<S>(state_->next_generation + 1u);
    current_graph_ = nullptr;
  }
  GraphT fresh_graph(bool live) {
    GraphT graph;
    graph.generation = state_->next_generation;
    graph.live = live;
    state_->next_generation = statemachine::to_id<S>(state_->next_generation + 1u);
    return graph;
  }

  // Visits `nodes` in reverse. `kept`, when not kNoGraph, is the graph they belong to, kept for
  // another backward: it remembers which nodes completed their backward, and (without
  // `retain`) which ones torch freed. (The graph is named, not pointed to: a recompute may add
  // a tape.) A freed node stops the pass at its turn: a Linear on the first line of its
  // backward (the table: TE's AttributeError), else torch's RuntimeError for freed saved tensors.
  Done backpropagate(Nodes& nodes, int kept, bool retain) {
    for (std::size_t i = nodes.size(); i-- > 0;) {
      NodeT& node = nodes[i];
      if (node.freed) {
        if (node.kind == NodeT::Kind::Module &&
            fire(spec::ModuleBackwardBegin{module_of(node), true}) == Done::Raising) {
          return Done::Raising;
        }
        host_->raise(nullptr, graph_already_freed());
        return Done::Raising;
      }
      switch (node.kind) {
        case NodeT::Kind::Module:
          // §3.3: the first line of the backward, then the unpack of what it saved, the
          // gradient casts, and the end of the backward (the update, if it owns it).
          if (fire(spec::ModuleBackwardBegin{module_of(node), node.backward_ran}) == Done::Raising) return Done::Raising;
          if (unpack_saved(node, retain) == Done::Raising) return Done::Raising;
          observer_->module_backward(module_of(node), node.fp8);
          host_->node_gradient(node);
          if (fire(spec::ModuleBackward{module_of(node), node.owner, node.fp8}) == Done::Raising) return Done::Raising;
          break;
        case NodeT::Kind::Function:
          if (unpack_saved(node, retain) == Done::Raising) return Done::Raising;
          host_->node_gradient(node);
          break;
        case NodeT::Kind::Checkpoint:
          // §3.5 CKR_BWD: the checkpoint function's backward unpacks its saved inputs first,
          // then recomputes the body into a sub-graph of fresh nodes and backpropagates that.
          if (unpack_saved(node, retain) == Done::Raising) return Done::Raising;
          if (backpropagate_checkpoint(node.reentrant) == Done::Raising) return Done::Raising;
          break;
      }
      node.backward_ran = true;  // for a pass that fails later: what it drops unused (abandon_nodes)
      if (GraphT* graph = kept_graph(kept)) {
        graph->nodes[i].backward_ran = true;
        graph->nodes[i].freed = !retain;
      }
    }
    return Done::Normally;
  }

  Done backpropagate_checkpoint(Id record_at) {
    GraphT sub_graph = fresh_graph(true);
    {
      // By value: the recompute may add records.
      const Record record = state_->records[record_at];
      // A failed recompute's graph is never backpropagated.
      const Done recomputed = leaving_on_raise(
          [&] { return recompute(record.capture, record.fp8, record.body, sub_graph, PackTarget<Traits>{kNone, false}); },
          [&] { (void)abandon_nodes(sub_graph.nodes); });
      if (recomputed == Done::Raising) return Done::Raising;
    }
    const Done passed = leaving_on_raise([&] { return backpropagate(sub_graph.nodes, kNoGraph, false); },
                                         [&] { (void)abandon_nodes(sub_graph.nodes); });
    if (passed == Done::Raising) return Done::Raising;
    return drop_nodes(sub_graph.nodes);  // torch backpropagates the sub-graph without retaining it
  }

  // §3.5 "Saved-tensor slots": the unpack of what a node saved through a non-reentrant frame's
  // hook. The first unpack while the frame holds no recomputed slot recomputes it; the table
  // then judges the node's slot (not reached by the recompute, or taken by an earlier unpack).
  // The slot's twin stays only while the node's graph is retained.
  Done unpack_saved(NodeT& node, bool retain) {
    if (node.frame == kNone) return Done::Normally;
    if (state_->frames[node.frame].recomputed_count == 0 && recompute_frame(node.frame) == Done::Raising) {
      return Done::Raising;
    }
    const Frame& frame = state_->frames[node.frame];
    const bool reached = node.slot < frame.recomputed_count;
    Slot* slot = reached ? &state_->recomputed_slots[frame.recomputed_begin + node.slot] : nullptr;
    if (fire(spec::SavedTensorUnpack{reached, reached && slot->taken}) == Done::Raising) return Done::Raising;
    if (!reached) return Done::Normally;
    host_->take_saved(node, *slot, frame.capture);
    slot->taken = true;
    if (!retain) host_->forget_twin(slot->twin);
    return Done::Normally;
  }

  // §3.5 CKR_BWD and NR_RECOMPUTE share one shape: GRAD(on); ARF_ENTER(rc); AC_ENTER(fp8, rc);
  // body; AC_EXIT; ARF_EXIT; GRAD pop. The exits run also when the body raises; a failed
  // ARF_ENTER has nothing to exit but the grad mode. The body is its own context: it records
  // into `graph`, and what its nodes save goes through `target` alone (no hook for a reentrant
  // recompute, target.frame == kNone; the frame's recompute hook for a non-reentrant one).
  Done recompute(CaptureId capture, bool fp8, const Body& body, GraphT& graph, PackTarget<Traits> target) {
    if (fire(spec::GradPush{true, true}) == Done::Raising) return Done::Raising;
    const Done entered = leaving_on_raise([&] { return fire(spec::RecomputeEnter{capture}); },
                                          [&] { (void)fire(spec::GradPop{}); });
    if (entered == Done::Raising) return Done::Raising;
    observer_->recompute_begin(capture);
    if (fire(spec::AutocastEnter{fp8, true}) == Done::Raising) return Done::Raising;
    GraphT* const outer_graph = current_graph_;
    typename State::template List<PackTarget<Traits>, capacity::PackTargets> outer_packs;
    outer_packs.swap(state_->packs);
    if (target.frame != kNone) state_->packs.push_back(target);
    current_graph_ = &graph;
    state_->recomputing.push_back(statemachine::to_id<S>(capture));
    // The context's exits; one that raises skips the ones after it.
    auto leave = [&]() -> Done {
      current_graph_ = outer_graph;
      state_->packs.swap(outer_packs);
      state_->recomputing.pop_back();  // before the exits, one of which may raise
      if (autocast_exit(false) == Done::Raising) return Done::Raising;
      if (fire(spec::RecomputeExit{}) == Done::Raising) return Done::Raising;
      observer_->recompute_end(capture);
      return fire(spec::GradPop{});
    };
    Done ran;
    try {
      ran = host_->run_body(body);
    } catch (...) {
      (void)leave();
      throw;
    }
    const Done left = leave();
    return ran == Done::Raising || left == Done::Raising ? Done::Raising : Done::Normally;
  }

  // §3.5 NR_RECOMPUTE: the frame's body alone, with its own fp8, under its recomputation hook:
  // what its own nodes save again goes into its recomputed slots (a checkpoint nested in the
  // body packs into its own new frame). The recompute's graph is never backpropagated. Once
  // it holds recomputed slots, the frame never recomputes again.
  Done recompute_frame(Id index) {
    GraphT discarded = fresh_graph(false);
    const Done recomputed = leaving_on_raise(
        [&] {
          // By value: the recompute may add frames.
          const Body body = state_->frames[index].body;
          const Frame& frame = state_->frames[index];
          return recompute(frame.capture, frame.fp8, body, discarded, PackTarget<Traits>{index, true});
        },
        [&] {
          if (drop_nodes(discarded.nodes) == Done::Raising) return;
          if (state_->frames[index].recomputed_count != 0) (void)release_frame(index);
        });
    if (recomputed == Done::Raising) return Done::Raising;
    if (drop_nodes(discarded.nodes) == Done::Raising) return Done::Raising;
    if (state_->frames[index].recomputed_count != 0) return release_frame(index);
    return Done::Normally;
  }

  // The node's saved tensors go through the innermost saved-tensor hook (spec §3.5): into the
  // next slot of the frame whose original forward is running, or into a recompute's slots.
  void record_node(NodeT node, bool saves_tensors = true) {
    node.id = state_->next_node;
    state_->next_node = statemachine::to_id<S>(state_->next_node + 1u);
    if (saves_tensors && !state_->packs.empty()) {
      const PackTarget<Traits> target = state_->packs.back();
      Frame& frame = state_->frames[target.frame];
      if (target.recompute) {
        if (frame.recomputed_count == 0) frame.recomputed_begin = statemachine::to_id<S>(state_->recomputed_slots.size());
        state_->recomputed_slots.push_back(Slot{false, node.payload});
        frame.recomputed_count = statemachine::to_id<S>(frame.recomputed_count + 1u);
      } else {
        node.frame = target.frame;
        node.slot = frame.slots;
        frame.slots = statemachine::to_id<S>(frame.slots + 1u);
        frame.live_nodes = statemachine::to_id<S>(frame.live_nodes + 1u);
        host_->drop_saved(node.payload);
      }
    }
    GraphT& graph = current_graph();
    observer_->node_recorded(node.id, module_of(node), node.kind == NodeT::Kind::Module && node.owner, graph.live);
    graph.nodes.push_back(std::move(node));
  }

  // A pass without retain failed. Over the step's graph, which no statement can name again,
  // what it had not dropped is dropped unused (TE's observer: their contexts are gone, no
  // backward ran). A saved tape still holds its graph: torch freed only the nodes whose
  // backward completed in this pass, and a later pass over the tape runs the others again, so
  // their checkpoints stay (fp8sm keeps their scaling for that recompute: I5), dropped when
  // the tape is saved over or a pass over it completes. `nodes`: the flags before the pass.
  Done drop_after_failed_pass(const Nodes& nodes, int kept) {
    const GraphT* tape = kept == kNoGraph ? nullptr : kept_graph(kept);
    if (tape == nullptr) return abandon_nodes(nodes);
    Nodes freed_now;
    for (std::size_t i = 0; i < nodes.size() && i < tape->nodes.size(); ++i) {
      if (!nodes[i].freed && tape->nodes[i].freed) freed_now.push_back(nodes[i]);
    }
    return drop_nodes(freed_now);
  }
  // Nodes that will never be backpropagated (again): the observer learns that those whose
  // backward never ran were discarded unused, and the checkpoints they held are released. A
  // module node whose backward ran (a retained graph's, before an exception ended the step) is
  // not one: if it owned, it made its update, so it stays a live owner for I3, as TE's
  // observer counts it (an owner is live while torch keeps its context or after its backward).
  Done abandon_nodes(const Nodes& nodes) {
    for (const NodeT& node : nodes) {
      if (!node.backward_ran) observer_->node_discarded(node.id);
    }
    return drop_nodes(nodes);
  }
  // Nodes that will never be backpropagated (again): checkpoints they held are released. A
  // freed node was dropped when the pass that freed it ended (drop_after_failed_pass, or the
  // completed pass), so it is passed over: only a tape's nodes can be freed, and the callers
  // pass a tape's nodes, or a copy with the flags from before the pass.
  Done drop_nodes(const Nodes& nodes) {
    for (const NodeT& node : nodes) {
      if (node.freed) continue;
      if (node.kind == NodeT::Kind::Checkpoint &&
          release_checkpoint(state_->records[node.reentrant].capture) == Done::Raising) {
        return Done::Raising;
      }
      if (node.frame != kNone) {
        Frame& frame = state_->frames[node.frame];
        frame.live_nodes = static_cast<Id>(frame.live_nodes - 1u);
        if (frame.live_nodes == 0 && frame.closed && release_frame(node.frame) == Done::Raising) return Done::Raising;
      }
    }
    return Done::Normally;
  }
  Done release_frame(Id index) { return release_checkpoint(state_->frames[index].capture); }
  // Fires CheckpointReleased once per capture.
  Done release_checkpoint(CaptureId capture) {
    State& st = *state_;
    if (capture < st.released_base) return Done::Normally;  // forgotten: nothing named it any more
    const std::size_t at = capture - st.released_base;
    if (at >= st.released.size()) st.released.resize(at + 1u, false);
    if (st.released[at]) return Done::Normally;
    st.released[at] = true;
    observer_->checkpoint_dropped(capture);
    return fire(spec::CheckpointReleased{capture});
  }

  Done autocast_exit(bool user) {
    observer_->autocast_exit_begin(user);
    if (fire(spec::AutocastExit{}) == Done::Raising) return Done::Raising;
    observer_->autocast_exit_end();
    return Done::Normally;
  }

  // What torch raises at a node whose saved tensors a backward without retain released.
  static spec::RaisedException graph_already_freed() {
    return spec::RaisedException{
        spec::ExceptionKind::RuntimeError,
        "Trying to backward through the graph a second time (or directly access saved tensors "
        "after they have already been freed)"};
  }

  template <class List>
  static void compact(List& entries, std::vector<int>& new_position) {
    std::size_t kept = 0;
    for (std::size_t i = 0; i < entries.size(); ++i) {
      if (new_position[i] < 0) continue;
      new_position[i] = static_cast<int>(kept);
      if (kept != i) entries[kept] = std::move(entries[i]);
      ++kept;
    }
    entries.resize(kept);
  }
  // Frames, and the recomputed slots of the frames kept.
  void compact_frames(std::vector<int>& new_position) {
    State& st = *state_;
    decltype(st.recomputed_slots) slots;
    for (std::size_t i = 0; i < st.frames.size(); ++i) {
      if (new_position[i] < 0) continue;
      Frame& frame = st.frames[i];
      const std::size_t begin = frame.recomputed_begin;
      frame.recomputed_begin = statemachine::to_id<S>(slots.size());
      for (std::size_t k = 0; k < frame.recomputed_count; ++k) slots.push_back(std::move(st.recomputed_slots[begin + k]));
    }
    st.recomputed_slots = std::move(slots);
    compact(st.frames, new_position);
  }

  Machine* machine_;
  Host* host_;
  statemachine::Observer* observer_;
  State* state_;
  GraphT* current_graph_ = nullptr;  // a recompute's graph while it runs; else the step's
};

}  // namespace fp8sm::driver
