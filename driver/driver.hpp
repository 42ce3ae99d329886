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
//     using Host = ...;         // the class below the driver
//     using NodePayload = ...;  // what a node keeps for its backward (default-constructible)
//     using Body = ...;         // what a checkpoint's recompute runs again
//   };
//
// and the host's answers to the driver (all called on `Traits::Host&`):
//
//   [[noreturn]] void raise(const spec::AnyEvent* event, spec::RaisedException raised);
//       the table raised while `event` fired (nullptr: torch raised, spec §3.3's freed graph)
//   void event_fired(const spec::AnyEvent&, const std::optional<spec::RaisedException>&);
//   void run_body(const Body&);               // a recompute: the body again
//   void node_gradient(Node<Traits>&);        // a module or function node's backward computes
//   void drop_saved(NodePayload&);            // a frame's hook discarded what the node saved
//   void take_saved(Node<Traits>&, typename NonReentrantFrame<Traits>::Slot&, CaptureId);
//                                             // the unpack takes what the recompute saved
//   void forget_twin(NodePayload&);           // an unpacked slot of a graph not retained
//
// A body stays as long as its record or frame (forget_unreachable): a checkpoint released by
// a failed pass without retain still recomputes when a later pass reaches its node again.
//
// Every exception passes through: the driver leaves each scope it opened (the exits fire) and
// rethrows. Nothing here is specific to one host; nothing that fires a table event lives in
// either host.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "driver/tape.hpp"
#include "spec/events.hpp"
#include "spec/scenario.hpp"
#include "statemachine/machine.hpp"
#include "statemachine/observer.hpp"

namespace fp8sm::driver {

// A place on the tape: the graph then current and how many nodes it held. What is recorded
// after it can be discarded (a `try` that caught an exception).
struct TapeMark {
  std::uint32_t generation = 0;
  std::size_t size = 0;
};

// A checkpoint's original forward in progress (between its begin and its end).
struct CheckpointCall {
  bool plain = false;        // run as a plain call (Machine::checkpoint_call_is_plain): no events
  bool reentrant = true;
  CaptureId capture = 0;
  bool grad_at_call = false;  // reentrant: a node is recorded only if grad was on
  int frame = -1;             // non-reentrant: its frame
};

template <class Traits>
class Driver {
 public:
  using Host = typename Traits::Host;
  using Body = typename Traits::Body;
  using Payload = typename Traits::NodePayload;
  using NodeT = Node<Traits>;
  using GraphT = Graph<Traits>;
  using Record = ReentrantRecord<Traits>;
  using Frame = NonReentrantFrame<Traits>;

  // `machine`, `host` and `observer` outlive the driver; the host implements the machine's hooks
  // and passes the claim on (claimed()).
  Driver(statemachine::Machine& machine, Host& host, statemachine::Observer& observer)
      : machine_(&machine), host_(&host), observer_(&observer) {
    step_graph_.generation = next_generation_++;
  }
  // A copy of `other` between two operations (no recompute running), bound to a new machine,
  // host and observer.
  Driver(const Driver& other, statemachine::Machine& machine, Host& host, statemachine::Observer& observer)
      : Driver(other) {
    machine_ = &machine;
    host_ = &host;
    observer_ = &observer;
    current_graph_ = &step_graph_;
  }
  // Becomes a copy of `other` between two operations, keeping its own machine, host and
  // observer, and its own storage where it is large enough (the explorer recycles states).
  void assign(const Driver& other) {
    statemachine::Machine* machine = machine_;
    Host* host = host_;
    statemachine::Observer* observer = observer_;
    *this = other;
    machine_ = machine;
    host_ = host;
    observer_ = observer;
    current_graph_ = &step_graph_;
  }

  // ---- single events -----------------------------------------------------------------------

  template <class Event>
  void fire(const Event& event) {
    std::optional<spec::RaisedException> raised = machine_->fire(event);
    const spec::AnyEvent any{event};
    observer_->event_fired(any, raised);
    host_->event_fired(any, raised);
    if (raised) host_->raise(&any, std::move(*raised));
  }

  void autocast_enter(bool enabled) { fire(spec::AutocastEnter{enabled, false}); }
  void autocast_exit() { autocast_exit(true); }
  void grad_push(bool enabled) { fire(spec::GradPush{enabled}); }
  void grad_pop() { fire(spec::GradPop{}); }

  // The machine's hook: the claim just fired made the recorded node the owner or not.
  void claimed(bool owner) { last_claim_owner_ = owner; }

  // ---- a module forward (§3.2) ---------------------------------------------------------------

  // prepare_forward (branch, register, stash or pop). Returns whether its casts are FP8.
  bool module_forward_begin(ModuleId m) {
    fire(spec::ModulePrepare{m});
    observer_->module_computed(m, recompute_depth() > 0);
    return machine_->module(m).fp8;
  }
  // The casts raised: prepare_forward is a context manager, its exit runs.
  void module_forward_failed(ModuleId m) { fire(spec::ModuleEndForward{m}); }
  // The claim while the autograd node is recorded (if grad is on), then end_forward.
  void module_forward_end(ModuleId m, Payload payload) {
    const bool records_node = machine_->grad_enabled();
    last_claim_owner_.reset();
    fire(spec::ModuleClaim{m});
    if (records_node) {
      NodeT node;
      node.kind = NodeT::Kind::Module;
      node.module = m;
      node.fp8 = machine_->module(m).fp8;
      node.owner = last_claim_owner_.value_or(false);
      node.payload = std::move(payload);
      record_node(std::move(node));
    }
    fire(spec::ModuleEndForward{m});
  }
  // A node without table events of its own (an activation), recorded if grad is on.
  void function_recorded(Payload payload) {
    if (!machine_->grad_enabled()) return;
    NodeT node;
    node.kind = NodeT::Kind::Function;
    node.payload = std::move(payload);
    record_node(std::move(node));
  }

  // ---- checkpoints (§3.5) --------------------------------------------------------------------

  // A checkpoint's call. CKR_FWD: the autograd Function's forward runs with grad off. NR_FWD:
  // fp8 is read before the body, which keeps the caller's grad mode; the frame's saved-tensor
  // hook is the innermost until its end. A plain call (spec §3.5 "Dispatch") fires nothing.
  CheckpointCall checkpoint_begin(bool reentrant) {
    CheckpointCall call;
    call.reentrant = reentrant;
    if ((call.plain = machine_->checkpoint_call_is_plain())) return call;
    call.capture = next_capture_++;
    if (reentrant) {
      call.grad_at_call = machine_->grad_enabled();
      fire(spec::GradPush{false, true});
      try {
        fire(spec::CheckpointForwardEnter{call.capture, true});
      } catch (...) {
        fire(spec::GradPop{});
        throw;
      }
    } else {
      call.frame = static_cast<int>(frames_.size());
      Frame frame;
      frame.capture = call.capture;
      frame.fp8 = machine_->fp8_enabled();
      frames_.push_back(std::move(frame));
      fire(spec::CheckpointForwardEnter{call.capture, false});
      packs_.push_back(PackTarget{call.frame, false});
    }
    observer_->checkpoint_forward_begin(call.capture);
    return call;
  }
  // Its forward ends, normally or while an exception unwinds through it (`exceptional`).
  // A reentrant checkpoint records its node (if grad was on at the call); a non-reentrant one
  // that recorded no node of its own, or failed, has nothing that could recompute it.
  // `node_payload` is what the reentrant checkpoint's node keeps.
  void checkpoint_end(const CheckpointCall& call, bool exceptional, Body body, Payload node_payload = {}) {
    if (call.plain) return;
    if (call.reentrant) {
      fire(spec::CheckpointForwardExit{exceptional});
      fire(spec::GradPop{});
      observer_->checkpoint_forward_end(call.capture, exceptional);
      if (exceptional || !call.grad_at_call) {  // no node (nested in a no-grad forward)
        release_checkpoint(call.capture);
        return;
      }
      Record record;
      record.body = std::move(body);
      record.capture = call.capture;
      record.fp8 = machine_->fp8_enabled();  // ctx_fp8 is read after the body (§2.4)
      reentrant_.push_back(std::move(record));
      NodeT node;
      node.kind = NodeT::Kind::Checkpoint;
      node.reentrant = static_cast<int>(reentrant_.size()) - 1;
      node.payload = std::move(node_payload);
      record_node(std::move(node));  // its save_for_backward goes through the enclosing frame's hook
      return;
    }
    packs_.pop_back();
    Frame& frame = frames_[static_cast<std::size_t>(call.frame)];
    frame.body = std::move(body);
    frame.closed = true;
    fire(spec::CheckpointForwardExit{exceptional});
    observer_->checkpoint_forward_end(call.capture, exceptional);
    // A failed forward's nodes are discarded by whoever catches.
    if (exceptional || frames_[static_cast<std::size_t>(call.frame)].live_nodes == 0) release_frame(call.frame);
  }

  // §3.7: a recompute context for which no forward was captured, around nothing.
  void recompute_uncaptured() {
    const CaptureId never_captured = next_capture_++;
    fire(spec::RecomputeEnter{never_captured});
    observer_->recompute_begin(never_captured);
    fire(spec::RecomputeExit{});
    observer_->recompute_end(never_captured);
  }

  // ---- the tape ------------------------------------------------------------------------------

  TapeMark mark() const { return {current_graph_->generation, current_graph_->nodes.size()}; }
  // What was recorded since `mark` is never backpropagated (a `try` caught an exception, or
  // the program abandoned the step): checkpoints it held are released.
  void discard_since(const TapeMark& mark) {
    GraphT& graph = *current_graph_;
    const std::size_t keep = graph.generation == mark.generation ? std::min(mark.size, graph.nodes.size()) : 0;
    std::vector<NodeT> discarded(std::make_move_iterator(graph.nodes.begin() + static_cast<std::ptrdiff_t>(keep)),
                                 std::make_move_iterator(graph.nodes.end()));
    graph.nodes.resize(keep);
    abandon_nodes(discarded);
  }
  // An exception left the step's program: what the step recorded (and did not save) is never
  // backpropagated, as if a `try` around the whole step had caught it.
  void abandon_step_graph() {
    std::vector<NodeT> abandoned = std::move(step_graph_.nodes);
    step_graph_.nodes.clear();
    abandon_nodes(abandoned);
  }
  // Closes the graph recorded so far under `tape` (the tape saved before under that name is
  // dropped); the next forward records a new graph.
  void save(std::uint16_t tape) {
    GraphT& saved = tape_at(tape);
    if (!saved.freed) drop_nodes(saved.nodes);
    saved = std::move(step_graph_);
    new_step_graph();
  }
  // The step ends: its graph goes; saved tapes stay.
  void end_step() {
    drop_nodes(step_graph_.nodes);
    new_step_graph();
  }
  bool has_recorded(std::uint16_t tape) const {
    const GraphT* graph = tape == spec::kCurrentGraph ? &step_graph_ : (tape < tapes_.size() ? &tapes_[tape] : nullptr);
    return graph != nullptr && !graph->nodes.empty();
  }

  // ---- backward (§3.3, §3.5) -----------------------------------------------------------------

  // One backward pass over the step's graph (`tape` = spec::kCurrentGraph) or a saved tape.
  // An empty graph makes an empty pass. A graph backpropagated before without retain runs
  // again: torch refuses only at a node whose backward completed then.
  void backward(std::uint16_t tape, bool retain) {
    GraphT* graph = tape == spec::kCurrentGraph ? &step_graph_ : &tape_at(tape);
    // The nodes are copied: a recompute may record into other graphs while we walk this one.
    std::vector<NodeT> nodes = graph->nodes;
    const bool was_freed = graph->freed;  // its checkpoints were released then
    GraphT* kept = graph;                 // where the nodes' flags are kept for a later pass
    if (!retain) {
      graph->freed = true;
      if (graph == &step_graph_) {  // the step's next statements record a new graph
        new_step_graph();
        kept = nullptr;
      }
    }
    observer_->backward_pass_begin();
    fire(spec::BackwardPassBegin{});
    fire(spec::GradPush{false, true});  // the engine runs backward functions with grad off
    try {
      backpropagate(nodes, kept, retain);
    } catch (...) {
      fire(spec::GradPop{});
      fire(spec::BackwardPassEnd{false});
      observer_->backward_pass_end(false);
      if (!retain && !was_freed) drop_nodes(nodes);
      throw;
    }
    fire(spec::GradPop{});
    fire(spec::BackwardPassEnd{true});
    observer_->backward_pass_end(true);
    if (!retain && !was_freed) drop_nodes(nodes);
  }

  // ---- what the hosts read -------------------------------------------------------------------

  int recompute_depth() const { return static_cast<int>(recomputing_.size()); }
  // The checkpoint whose recompute runs innermost, if any.
  std::optional<CaptureId> innermost_recompute() const {
    if (recomputing_.empty()) return std::nullopt;
    return recomputing_.back();
  }
  const GraphT& step_graph() const { return step_graph_; }
  const std::vector<GraphT>& tapes() const { return tapes_; }
  const std::vector<Record>& records() const { return reentrant_; }
  const std::vector<Frame>& frames() const { return frames_; }
  const std::vector<bool>& released() const { return released_; }
  CaptureId next_capture() const { return next_capture_; }
  NodeId next_node() const { return next_node_; }
  std::uint32_t next_generation() const { return next_generation_; }

  // Between steps, with no graph but the saved tapes left: records and frames nothing names
  // any more are forgotten (a long-running program's ledger stays as large as its tapes).
  // Positions change; ids do not.
  void forget_unreachable() {
    auto for_each_node = [&](auto&& visit) {
      for (NodeT& node : step_graph_.nodes) visit(node);
      for (GraphT& graph : tapes_) {
        for (NodeT& node : graph.nodes) visit(node);
      }
    };
    std::vector<int> record_at(reentrant_.size(), -1), frame_at(frames_.size(), -1);
    for_each_node([&](const NodeT& node) {
      if (node.reentrant >= 0) record_at[static_cast<std::size_t>(node.reentrant)] = 0;
      if (node.frame >= 0) frame_at[static_cast<std::size_t>(node.frame)] = 0;
    });
    compact(reentrant_, record_at);
    compact(frames_, frame_at);
    for_each_node([&](NodeT& node) {
      if (node.reentrant >= 0) node.reentrant = record_at[static_cast<std::size_t>(node.reentrant)];
      if (node.frame >= 0) node.frame = frame_at[static_cast<std::size_t>(node.frame)];
    });
    // Released flags below the oldest capture still named are never read again.
    CaptureId oldest = next_capture_;
    for (const Record& r : reentrant_) oldest = std::min(oldest, r.capture);
    for (const Frame& f : frames_) oldest = std::min(oldest, f.capture);
    const std::size_t drop = std::min<std::size_t>(oldest - released_base_, released_.size());
    released_.erase(released_.begin(), released_.begin() + static_cast<std::ptrdiff_t>(drop));
    released_base_ += static_cast<CaptureId>(drop);
  }

 private:
  // Where a node's saved tensors go (torch's saved-tensor hooks, innermost only): into the
  // slots of a non-reentrant checkpoint's original forward, or into what its recompute saves.
  struct PackTarget {
    int frame = -1;
    bool recompute = false;
  };

  // For the rebinding copy and assign only: a plain copy would share the other's machine.
  Driver(const Driver&) = default;
  Driver& operator=(const Driver&) = default;

  GraphT& tape_at(std::uint16_t tape) {
    if (tape >= tapes_.size()) tapes_.resize(tape + 1u);
    return tapes_[tape];
  }
  void new_step_graph() {
    step_graph_ = GraphT{};
    step_graph_.generation = next_generation_++;
    current_graph_ = &step_graph_;
  }

  // Visits `nodes` in reverse. `kept`, when given, is the graph they belong to, kept for another
  // backward: it remembers which nodes completed their backward, and (without `retain`) which
  // ones torch freed. A freed node stops the pass at its turn: a Linear on the first line of its
  // backward (the table: TE's AttributeError), else torch's RuntimeError for freed saved tensors.
  void backpropagate(std::vector<NodeT>& nodes, GraphT* kept, bool retain) {
    for (std::size_t i = nodes.size(); i-- > 0;) {
      NodeT& node = nodes[i];
      if (node.freed) {
        if (node.kind == NodeT::Kind::Module) fire(spec::ModuleBackwardBegin{node.module, true});
        host_->raise(nullptr, graph_already_freed());
      }
      switch (node.kind) {
        case NodeT::Kind::Module:
          // §3.3: the first line of the backward, then the unpack of what it saved, the
          // gradient casts, and the end of the backward (the update, if it owns it).
          fire(spec::ModuleBackwardBegin{node.module, node.backward_ran});
          unpack_saved(node, retain);
          observer_->module_backward(node.module, node.fp8);
          host_->node_gradient(node);
          fire(spec::ModuleBackward{node.module, node.owner, node.fp8});
          break;
        case NodeT::Kind::Function:
          unpack_saved(node, retain);
          host_->node_gradient(node);
          break;
        case NodeT::Kind::Checkpoint:
          // §3.5 CKR_BWD: the checkpoint function's backward unpacks its saved inputs first,
          // then recomputes the body into a sub-graph of fresh nodes and backpropagates that.
          unpack_saved(node, retain);
          backpropagate_checkpoint(static_cast<std::size_t>(node.reentrant));
          break;
      }
      if (kept != nullptr) {
        kept->nodes[i].backward_ran = true;
        kept->nodes[i].freed = !retain;
      }
    }
  }

  void backpropagate_checkpoint(std::size_t record_at) {
    GraphT sub_graph;
    sub_graph.generation = next_generation_++;
    {
      // By value: the recompute may add records.
      const Record record = reentrant_[record_at];
      try {
        recompute(record.capture, record.fp8, record.body, sub_graph, PackTarget{});
      } catch (...) {
        abandon_nodes(sub_graph.nodes);  // a failed recompute's graph is never backpropagated
        throw;
      }
    }
    try {
      backpropagate(sub_graph.nodes, nullptr, false);
    } catch (...) {
      drop_nodes(sub_graph.nodes);
      throw;
    }
    drop_nodes(sub_graph.nodes);  // torch backpropagates the sub-graph without retaining it
  }

  // §3.5 "Saved-tensor slots": the unpack of what a node saved through a non-reentrant frame's
  // hook. The first unpack while the frame holds no recomputed slot recomputes it; the table
  // then judges the node's slot (not reached by the recompute, or taken by an earlier unpack).
  // The slot's twin stays only while the node's graph is retained.
  void unpack_saved(NodeT& node, bool retain) {
    if (node.frame < 0) return;
    const auto at = static_cast<std::size_t>(node.frame);
    if (frames_[at].recomputed.empty()) recompute_frame(node.frame);
    const bool reached = node.slot < frames_[at].recomputed.size();
    fire(spec::SavedTensorUnpack{reached, reached && frames_[at].recomputed[node.slot].taken});
    if (!reached) return;  // the table raised
    typename Frame::Slot& slot = frames_[at].recomputed[node.slot];
    host_->take_saved(node, slot, frames_[at].capture);
    slot.taken = true;
    if (!retain) host_->forget_twin(slot.twin);
  }

  // §3.5 CKR_BWD and NR_RECOMPUTE share one shape: GRAD(on); ARF_ENTER(rc); AC_ENTER(fp8, rc);
  // body; AC_EXIT; ARF_EXIT; GRAD pop. The exits run also when the body raises; a failed
  // ARF_ENTER has nothing to exit but the grad mode. The body is its own context: it records
  // into `graph`, and what its nodes save goes through `target` alone (no hook for a reentrant
  // recompute; the frame's recompute hook for a non-reentrant one).
  void recompute(CaptureId capture, bool fp8, const Body& body, GraphT& graph, PackTarget target) {
    fire(spec::GradPush{true, true});
    try {
      fire(spec::RecomputeEnter{capture});
    } catch (...) {
      fire(spec::GradPop{});
      throw;
    }
    observer_->recompute_begin(capture);
    fire(spec::AutocastEnter{fp8, true});
    GraphT* const outer_graph = current_graph_;
    std::vector<PackTarget> outer_packs;
    outer_packs.swap(packs_);
    if (target.frame >= 0) packs_.push_back(target);
    current_graph_ = &graph;
    recomputing_.push_back(capture);
    auto leave = [&] {
      current_graph_ = outer_graph;
      packs_.swap(outer_packs);
      recomputing_.pop_back();  // before the exits, one of which may raise
      autocast_exit(false);
      fire(spec::RecomputeExit{});
      observer_->recompute_end(capture);
      fire(spec::GradPop{});
    };
    try {
      host_->run_body(body);
    } catch (...) {
      leave();
      throw;
    }
    leave();
  }

  // §3.5 NR_RECOMPUTE: the frame's body alone, with its own fp8, under its recomputation hook:
  // what its own nodes save again goes into its `recomputed` slots (a checkpoint nested in the
  // body packs into its own new frame). The recompute's graph is never backpropagated. Once
  // it holds recomputed slots, the frame never recomputes again.
  void recompute_frame(int index) {
    const auto at = static_cast<std::size_t>(index);
    GraphT discarded;
    discarded.generation = next_generation_++;
    discarded.live = false;
    try {
      // By value: the recompute may add frames.
      const Body body = frames_[at].body;
      recompute(frames_[at].capture, frames_[at].fp8, body, discarded, PackTarget{index, true});
    } catch (...) {
      drop_nodes(discarded.nodes);
      if (!frames_[at].recomputed.empty()) release_frame(index);
      throw;
    }
    drop_nodes(discarded.nodes);
    if (!frames_[at].recomputed.empty()) release_frame(index);
  }

  // The node's saved tensors go through the innermost saved-tensor hook (spec §3.5): into the
  // next slot of the frame whose original forward is running, or into a recompute's slots.
  void record_node(NodeT node) {
    node.id = next_node_++;
    if (!packs_.empty()) {
      const PackTarget target = packs_.back();
      Frame& frame = frames_[static_cast<std::size_t>(target.frame)];
      if (target.recompute) {
        frame.recomputed.push_back(typename Frame::Slot{false, node.payload});
      } else {
        node.frame = target.frame;
        node.slot = frame.slots++;
        ++frame.live_nodes;
        host_->drop_saved(node.payload);
      }
    }
    observer_->node_recorded(node.id, node.module, node.kind == NodeT::Kind::Module && node.owner,
                             current_graph_->live);
    current_graph_->nodes.push_back(std::move(node));
  }

  // Nodes that were never backpropagated and never will be: the observer learns they were
  // discarded, and the checkpoints they held are released.
  void abandon_nodes(const std::vector<NodeT>& nodes) {
    for (const NodeT& node : nodes) observer_->node_discarded(node.id);
    drop_nodes(nodes);
  }
  // Nodes that will never be backpropagated (again): checkpoints they held are released.
  void drop_nodes(const std::vector<NodeT>& nodes) {
    for (const NodeT& node : nodes) {
      if (node.kind == NodeT::Kind::Checkpoint) {
        release_checkpoint(reentrant_[static_cast<std::size_t>(node.reentrant)].capture);
      }
      if (node.frame >= 0) {
        Frame& frame = frames_[static_cast<std::size_t>(node.frame)];
        if (--frame.live_nodes == 0 && frame.closed) release_frame(node.frame);
      }
    }
  }
  void release_frame(int index) { release_checkpoint(frames_[static_cast<std::size_t>(index)].capture); }
  // Fires CheckpointReleased once per capture.
  void release_checkpoint(CaptureId capture) {
    if (capture < released_base_) return;  // forgotten: nothing named it any more
    const std::size_t at = capture - released_base_;
    if (at >= released_.size()) released_.resize(at + 1u, false);
    if (released_[at]) return;
    released_[at] = true;
    observer_->checkpoint_dropped(capture);
    fire(spec::CheckpointReleased{capture});
  }

  void autocast_exit(bool user) {
    observer_->autocast_exit_begin(user);
    fire(spec::AutocastExit{});
    observer_->autocast_exit_end();
  }

  // What torch raises at a node whose saved tensors a backward without retain released.
  static spec::RaisedException graph_already_freed() {
    return spec::RaisedException{
        spec::ExceptionKind::RuntimeError,
        "Trying to backward through the graph a second time (or directly access saved tensors "
        "after they have already been freed)"};
  }

  template <class T>
  static void compact(std::vector<T>& entries, std::vector<int>& new_position) {
    std::size_t kept = 0;
    for (std::size_t i = 0; i < entries.size(); ++i) {
      if (new_position[i] < 0) continue;
      new_position[i] = static_cast<int>(kept);
      if (kept != i) entries[kept] = std::move(entries[i]);
      ++kept;
    }
    entries.resize(kept);
  }

  statemachine::Machine* machine_;
  Host* host_;
  statemachine::Observer* observer_;

  GraphT step_graph_;
  GraphT* current_graph_ = &step_graph_;  // the step's graph, or a recompute's
  std::vector<GraphT> tapes_;             // index = tape name
  std::uint32_t next_generation_ = 1;
  std::vector<Record> reentrant_;
  std::vector<Frame> frames_;
  std::vector<PackTarget> packs_;  // innermost last
  CaptureId next_capture_ = 0;
  std::vector<bool> released_;   // per capture, from released_base_
  CaptureId released_base_ = 0;
  NodeId next_node_ = 0;
  std::vector<CaptureId> recomputing_;  // recomputes in progress, innermost last
  std::optional<bool> last_claim_owner_;
};

}  // namespace fp8sm::driver
