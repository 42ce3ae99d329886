// The runtime's state: one per model replica. It owns the state machine (the same table the
// explorer checks), the FP8 meta of every module, the amax registry and the open scopes. Every
// event it fires goes through the driver (driver/driver.hpp), which holds the tape and the
// checkpoint ledger and fires each composite operation's events exactly as the explorer's
// interpreter does; the context implements the table's hooks by computing on the backend.
//
//   runtime::Context ctx(runtime::Recipe{});
//   runtime::Linear l0(ctx, "L0", 16, 32), l1(ctx, "L1", 32, 1);
//   Matrix y;
//   {
//     runtime::Autocast fp8(ctx);
//     y = runtime::checkpoint(ctx, runtime::CheckpointMode::Reentrant,
//                             [&](const Matrix& x) { return l1.forward(runtime::relu(ctx, l0.forward(x))); }, x);
//   }
//   ctx.backward(loss_gradient(y));
//   runtime::StepCounts counts = ctx.end_step();   // forward_updates == backward_updates == 1
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "driver/done.hpp"
#include "kernels/scaling_meta.hpp"
#include "runtime/backend.hpp"
#include "runtime/context_ref.hpp"
#include "runtime/node_function.hpp"
#include "runtime/recipe.hpp"
#include "runtime/tensor.hpp"
#include "spec/events.hpp"
#include "spec/semantics.hpp"
#include "spec/step_result.hpp"
#include "statemachine/hooks.hpp"
#include "statemachine/storage.hpp"

namespace fp8sm::statemachine {
template <class S>
class BasicMachine;
using Machine = BasicMachine<GrowableStorage>;
class Observer;
}
namespace fp8sm::driver {
template <class Traits>
class Driver;
template <class Traits>
struct DriverState;
}

namespace fp8sm::runtime {

class Linear;
class Autocast;
class NoGrad;
class Context;
class Gradients;
enum class CheckpointMode { Reentrant, NonReentrant };
// A checkpointed function of one matrix, on the chain (below), and of any tensors of the graph.
using CheckpointFunction = std::function<Matrix(const Matrix&)>;
using GraphFunction = std::function<Tensor(const std::vector<Tensor>&)>;

struct StepCounts {
  int forward_updates = 0;
  int backward_updates = 0;
};

// The FP8 meta of one module (spec §2.3): forward slots input (0) and weight (1), backward
// slot grad_output (0), and what the semantics keep beside it. This is a host copy, what
// Context::meta gives to look at; the context keeps the live meta where its backend computes
// (MetaTensors, backend.hpp: device memory on a device backend).
struct ModuleMeta {
  std::string name;
  kernels::ScalingMeta forward;
  kernels::ScalingMeta backward;
  std::deque<kernels::ScalingMeta> stash;       // upstream / pr3213: the module's deque
  std::optional<kernels::ScalingMeta> updated;  // m.updated_amax_history_fwd
};

// One event fired into the table, the rows it took (RowCatalogue indices: which guards held),
// and the kind of exception it raised (empty: none). The interpreter's and the runtime's
// traces of one program are equal (the trace property).
struct FiredEvent {
  spec::AnyEvent event;
  std::string raised;
  std::vector<std::uint16_t> rows;
};

// A checkpoint's function and its inputs, what its recomputes run again; for a reentrant
// checkpoint, the tensor its node wrote (whose gradient seeds the recompute's backward).
struct CheckpointBody {
  GraphFunction function;
  std::vector<Tensor> inputs;
  TensorId output = 0;
  Shape output_shape;  // what the forward returned: a reentrant recompute must return the same
};

// The runtime as the driver's host: a node keeps its function, a checkpoint's body is shared
// (the driver copies a body while it runs: a recompute may grow the ledger under it).
struct RuntimeTraits {
  using Storage = statemachine::GrowableStorage;
  using Host = Context;
  using NodePayload = std::shared_ptr<NodeFunction>;
  using Body = std::shared_ptr<const CheckpointBody>;
};

// The graph: every op takes tensors (tensor.hpp) and returns one; its node records which it
// read and which it wrote, so a tensor may feed several ops (a residual) and an op read several
// tensors (an attention's output projection and its residual). A backward pass visits the
// recorded nodes in torch's order (each once all its consumers have passed it their gradients;
// among those ready, the most recently recorded first: for a graph recorded as the program ran,
// exactly the reverse of recording) and sums each tensor's gradients in the order they come.
//
// The chain: the ops that take a Matrix (Linear::forward(Matrix), relu(Matrix),
// checkpoint(..., Matrix)) read the tensor the last recorded op wrote and, when they record a
// node, write the next one: a chain of nodes, each turning its output's gradient into its
// input's, as programs wrote before tensors existed. backward(Matrix) starts at the chain's end.
class Context : private statemachine::Hooks {
 public:
  explicit Context(Recipe recipe, std::unique_ptr<Backend> backend = make_cpu_backend(),
                   spec::Semantics semantics = spec::Semantics::Fp8sm, AmaxReductionGroup* group = nullptr);
  ~Context() override;
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  // A leaf of the graph: a value the program feeds in (its gradient is kept: gradient()). On a
  // device backend it is uploaded here, once (a counted copy); so is backward's grad_output.
  // std::invalid_argument for a matrix with no values, one whose rows and cols do not match
  // its values, or a NaN or infinity; MisuseError for a matrix on another backend's device.
  Tensor input(Matrix value);

  // One backward pass over the graph recorded so far, from `loss` with gradient grad_output
  // (its shape). Every recorded node must lead to `loss` (torch would not run the backward of
  // one that does not, which the table would count), and every tensor a node read must still
  // be the shape its writer recorded: MisuseError otherwise, before any event, as for a
  // grad_output of another shape than the loss (std::invalid_argument for a bad value). Without
  // retain_graph the graph is freed: the next forward records a new one. Throws MisuseError while
  // a checkpoint's function is running, and for a loss of another context.
  void backward(const Tensor& loss, const Matrix& grad_output, bool retain_graph = false);
  // The gradient the last backward pass summed at `tensor` (a leaf: an input), or an empty
  // matrix if none reached it. The gradients of a node's output are freed once the node ran.
  // MisuseError for a tensor of another context (its id would name another tensor here).
  Matrix gradient(const Tensor& tensor) const;

  // One backward pass over the chain, from the gradient of its last output (its shape). Returns
  // the gradient of its first input. Without retain_graph the graph is freed: the next forward
  // records a new one, and a backward before that is an empty pass (it returns grad_output).
  // Throws MisuseError while a checkpoint's function is running.
  Matrix backward(const Matrix& grad_output, bool retain_graph = false);
  // Closes the graph recorded so far under `tape` (a finished micro-batch loss; a graph saved
  // before under that name is dropped); the next forward records a new graph. Saved graphs
  // outlive end_step. backward(tape, ...) runs a pass over one, as backward(...) does over
  // the current graph; a second pass without retain_graph before it raises torch's
  // RuntimeError (StateError) at the first node the first one freed. Throws MisuseError
  // inside a checkpoint's function, or for a tape never saved.
  void save_graph(const std::string& tape);
  Matrix backward(const std::string& tape, const Matrix& grad_output, bool retain_graph = false);
  // Ends the training step: what was recorded and not backpropagated is dropped. Returns the
  // step's update counts. Throws MisuseError while a scope is open.
  StepCounts end_step();
  StepCounts counts() const { return counts_; }

  // Where the tape is now. A program that catches an exception thrown by its own forward hands
  // the mark taken before it to discard_since: what was recorded since is never
  // backpropagated (torch would never reach it), and checkpoints it held are released. A mark
  // taken in this step before the graph being recorded began (a backward without retain or a
  // save_graph since) discards all of that graph: all of it was recorded since. Only mark()
  // makes a mark, and discard_since refuses (MisuseError, nothing discarded) a default mark, one
  // of another context, one of an earlier step, one taken on a graph that began after the one
  // being recorded (inside a recompute, used outside it), and one past nodes already discarded.
  // A mark may be used again (a retry after a second failure) while it is valid.
  class TapeMark {
   public:
    TapeMark() = default;

   private:
    friend class Context;
    ContextSerial context = 0;
    std::uint64_t step = 0;
    std::uint32_t generation = 0;
    std::size_t size = 0;
    std::uint32_t last_node = 0;  // the driver's id of the node before the mark (size > 0)
    TensorId chain_end = 0;       // the chain's end then
  };
  TapeMark mark() const;
  void discard_since(const TapeMark& mark);
  // Whether the current graph, or a saved tape, holds anything backward would run.
  bool has_recorded() const;
  bool has_recorded(const std::string& tape) const;
  // Whether a checkpoint's recompute is running (its function is being called again).
  bool in_recompute() const;

  // TE's recompute phase entered and left around nothing, for a checkpoint that never ran its
  // forward (activation_recompute_forward(recompute_phase=True) called outside any checkpoint,
  // spec §3.7). Throws StateError as TE raises.
  void recompute_uncaptured();

  // Every table event fired from now on is appended to `log` (nullptr stops): for benchmarks
  // and tests that replay a step's events on a bare machine or compare them with the model's.
  void log_events(std::vector<FiredEvent>* log);

  // What the machine says now.
  bool grad_enabled() const;
  bool fp8_enabled() const;
  int autocast_depth() const;
  const statemachine::Machine& machine() const { return *machine_; }

  const Recipe& recipe() const { return recipe_; }
  Backend& backend() { return *backend_; }
  // This context's serial number (Tensor::context).
  ContextSerial serial() const { return *life_; }
  // Module m's meta, copied to the host (a download on a device backend: not inside a step's
  // hot path). Its name alone: module_name.
  ModuleMeta meta(spec::ModuleId m) const;
  const std::string& module_name(spec::ModuleId m) const { return modules_.at(m).name; }
  std::size_t module_count() const { return modules_.size(); }
  // The registry of the forward and backward keys, in registration order.
  const std::vector<spec::ModuleId>& registry() const { return registry_; }

 private:
  using Driver = driver::Driver<RuntimeTraits>;
  friend Driver;
  friend class ContextRef;
  friend class Linear;
  friend class Autocast;
  friend class NoGrad;
  friend class LinearNode;
  friend Tensor checkpoint(Context&, CheckpointMode, const GraphFunction&, const std::vector<Tensor>&);
  friend Matrix checkpoint(Context&, CheckpointMode, const CheckpointFunction&, const Matrix&);
  friend class Ops;

  enum class ScopeKind { Autocast, NoGrad, Checkpoint };
  struct OpenScope {
    ScopeKind kind;
    std::size_t id;
    bool abandoned = false;  // its object was destroyed while a scope inside it was open
  };

  // What every op requires of a tensor it reads, before it computes or fires anything (the one
  // rule of runtime/README.md, "Errors"): made by this context (MisuseError), well-formed with
  // values (std::invalid_argument), finite where its values are on the host (std::invalid_argument).
  void require_operand(const Tensor& tensor, const std::string& what) const;
  // MisuseError naming `what` unless this context made `tensor` (the first of those checks).
  void require_own(const Tensor& tensor, const std::string& what) const;
  // A value the program hands in (input, the chain's input, a gradient seed): checked
  // (require_program_value), then where the backend computes.
  Matrix admit(Matrix value, const std::string& what) const;

  // Modules.
  spec::ModuleId add_module(const std::string& name);
  // A module forward (spec §3.2) reading `inputs`: prepare, the casts (`compute(fp8)` returns
  // the output and the node's function), the claim with the node's recording, end_forward.
  using ModuleCompute = std::function<std::pair<Matrix, std::shared_ptr<NodeFunction>>(bool fp8)>;
  Tensor run_module(spec::ModuleId m, const std::vector<const Tensor*>& inputs, const ModuleCompute& compute);
  // The live meta of module m, where the backend keeps it (the FP8 casts point into it).
  struct ModuleState {
    std::string name;
    MetaTensors forward, backward;
    std::deque<MetaTensors> stash;
    std::optional<MetaTensors> updated;
  };
  ModuleState& state(spec::ModuleId m) { return modules_.at(m); }
  // An op without table events of its own (an activation, a sum, a norm), its node recorded
  // if grad is on: its output tensor.
  Tensor record_function(Matrix output, const std::vector<const Tensor*>& inputs, std::shared_ptr<NodeFunction> function);
  // What a node read and wrote (its ids and shapes), set where it is recorded.
  static void connect(NodeFunction& node, const std::vector<const Tensor*>& inputs, const Matrix& output, TensorId id);

  // The chain (above): its first tensor and its end; the tensor a Matrix op reads, and its end
  // moved to what it wrote if it recorded a node.
  struct Chain {
    TensorId start = 0;
    TensorId end = 0;
  };
  Tensor chain_input(const Matrix& x, const std::string& what) const { return tensor(admit(x, what), chain_.end); }
  Matrix chain_output(Tensor output);
  TensorId new_tensor() { return ++last_tensor_; }
  Tensor tensor(Matrix value, TensorId id) const { return Tensor{std::move(value), id, serial()}; }
  void new_chain();

  // Scopes: the order the program opens and leaves them in (no events).
  std::size_t open_scope(ScopeKind kind);
  void close_scope(ScopeKind kind, std::size_t id);  // checks order, pops
  static const char* scope_name(ScopeKind kind);
  void enter_autocast(bool enabled);
  void grad_push(bool enabled);
  // The exit of an Autocast or NoGrad scope just closed, then those of the abandoned scopes it
  // uncovers (leave_abandoned_scopes); what the last one raised goes on (Python's `with`).
  void exit_scope(ScopeKind kind);
  // Leaves the abandoned scopes (below) that a scope just closed uncovered, innermost first;
  // `raised`, or what the last exit raised, goes on.
  void leave_abandoned_scopes(std::exception_ptr raised = nullptr);
  void fire_exit(ScopeKind kind, std::exception_ptr& raised);
  // A scope object is being destroyed without close(): true when it is the innermost open scope
  // and its destructor leaves it as close() does. Otherwise false, and the context has taken
  // care of it: a scope that is no longer open (left for it, below) needs nothing; one with a
  // scope inside it still open (scopes on the heap, destroyed out of order) is abandoned, and
  // left as soon as the scopes inside it are.
  bool destroyed_scope_is_innermost(std::size_t id);
  // Leaves every scope beyond the first `depth` open ones, innermost first (a checkpoint's
  // function returned, or threw, with a scope it opened still open). Returns what it left, for
  // the message ("" if nothing was).
  std::string leave_scopes_beyond(std::size_t depth);
  Tensor run_checkpoint(CheckpointMode mode, const GraphFunction& function, const std::vector<Tensor>& inputs);
  // A checkpoint's function, in its forward or its recompute, with `scope_depth` scopes open at
  // its call: what it returned (a tensor of this context), and no scope it opened left open.
  Tensor run_function(const GraphFunction& function, const std::vector<Tensor>& inputs, std::size_t scope_depth);

  // CheckpointError unless a reentrant recompute's output and graph can be backpropagated.
  void check_reentrant_recompute(const CheckpointBody& body, const Tensor& output) const;
  // The tape saved as `tape`: MisuseError if none was (backward of a tape never saved).
  std::uint16_t saved_tape(const std::string& tape) const;
  // A pass over `tape`'s chain (the current graph's, or one saved with it) from its end: the
  // gradient of its first input. `chain` is a copy: the pass may start a new chain.
  Matrix chain_backward(std::uint16_t tape, Chain chain, const Matrix& grad_output, bool retain_graph,
                        const std::string& what);
  // A pass over `tape` from tensor `loss`; the gradients it leaves stay in gradients_.
  void run_backward(std::uint16_t tape, TensorId loss, const std::optional<Shape>& loss_shape, const Matrix& grad_output,
                    bool retain_graph, const std::string& what);
  void node_backward(NodeFunction& node);

  // The driver's host.
  [[noreturn]] void raise(const spec::AnyEvent* event, spec::RaisedException raised);
  void event_fired(const spec::AnyEvent& event, const std::optional<spec::RaisedException>& raised);
  driver::Done run_body(const RuntimeTraits::Body& body);
  static void completes(driver::Done done);
  template <class NodeT>
  void node_gradient(NodeT& node) { node_backward(*node.payload); }
  void drop_saved(std::shared_ptr<NodeFunction>& function) { function->drop_saved(); }
  template <class NodeT, class SlotT>
  void take_saved(NodeT& node, SlotT& slot, spec::CaptureId capture) { take_twin(*node.payload, slot.twin, node.slot, capture); }
  void take_twin(NodeFunction& node, const std::shared_ptr<NodeFunction>& twin, std::uint32_t slot, spec::CaptureId capture);
  void forget_twin(std::shared_ptr<NodeFunction>& twin) { twin.reset(); }

  // Hooks: the table's actions, computed on the backend.
  void forward_update() override;
  void backward_update() override;
  void discard_forward_amax() override;
  void registered(spec::ModuleId m) override;
  void stash(spec::ModuleId m) override;
  void save_for_restore(spec::ModuleId m) override;
  void pop_stash(spec::ModuleId m) override;
  void restore(spec::ModuleId m) override;
  void stash_for(spec::ModuleId m, spec::CaptureId c) override;
  void replay_stash(spec::ModuleId m, spec::CaptureId c, unsigned occurrence) override;
  void release_stash(spec::CaptureId c) override;
  void claimed(spec::ModuleId m, bool owner) override;
  void update(bool backward);

  // The token whose weak copies modules and scopes hold (ContextRef), holding the serial.
  std::shared_ptr<const ContextSerial> life_;
  Recipe recipe_;
  std::unique_ptr<Backend> backend_;
  AmaxReductionGroup* group_;
  std::unique_ptr<statemachine::Machine> machine_;
  std::unique_ptr<statemachine::Observer> silent_;  // the driver's observer: the runtime checks nothing
  std::unique_ptr<driver::DriverState<RuntimeTraits>> driver_state_;  // the tape and the checkpoint ledger
  std::unique_ptr<Driver> driver_;

  std::vector<ModuleState> modules_;
  std::vector<spec::ModuleId> registry_;
  std::map<spec::CaptureId, std::vector<std::pair<spec::ModuleId, MetaTensors>>> checkpoint_stash_;
  std::map<std::string, std::uint16_t> tapes_;  // the driver's tape of each name

  std::vector<OpenScope> scopes_;
  std::size_t next_scope_ = 0;
  int checkpoints_open_ = 0;  // checkpoint scopes among scopes_
  // Modules run in FP8 in the current region (outermost autocast, or recompute): TE forbids a
  // second run while reduce_amax is set, since row 0 would mix two casts of one quantizer.
  // One entry per autocast entered, set where it opens a region.
  std::vector<bool> autocast_opens_region_;
  std::vector<std::set<spec::ModuleId>> region_runs_;

  // The graph's tensors: the last id handed out; the chain's first tensor and its end, of the
  // current graph and of each saved tape; what the node recorded last wrote.
  TensorId last_tensor_ = 0;
  Chain chain_;
  std::map<std::uint16_t, Chain> tape_chains_;
  TensorId recorded_output_ = 0;
  std::unique_ptr<Gradients> gradients_;  // a backward pass's gradients, per tensor (autograd.hpp)
  StepCounts counts_;
  std::uint64_t steps_ended_ = 0;  // which step this is, for TapeMark
  std::vector<FiredEvent>* event_log_ = nullptr;
  std::vector<std::uint16_t> rows_taken_;  // by the event being fired, while logging
};

}  // namespace fp8sm::runtime
