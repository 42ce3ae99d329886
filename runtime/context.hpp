// The runtime's state: one per model replica. It owns the state machine (the same table the
// explorer checks), the FP8 meta of every module, the amax registry, the tape, and the open
// scopes. Every state decision is the machine's: the context fires the table's events in the
// order spec §3 gives for each operation (the explorer's interpreter fires the same ones), and
// implements the table's hooks by computing on the backend.
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
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "kernels/scaling_meta.hpp"
#include "runtime/backend.hpp"
#include "runtime/recipe.hpp"
#include "runtime/tape.hpp"
#include "spec/semantics.hpp"
#include "statemachine/machine.hpp"

namespace fp8sm::runtime {

class Linear;
class Autocast;
class NoGrad;
enum class CheckpointMode { Reentrant, NonReentrant };
using CheckpointFunction = std::function<Matrix(const Matrix&)>;

struct StepCounts {
  int forward_updates = 0;
  int backward_updates = 0;
};

// A non-reentrant checkpoint: TE's _CheckpointFrame with its saved-tensor hooks (spec §3.5).
// Its own nodes are those recorded while it is the innermost non-reentrant checkpoint open;
// the hook discards what each saves and numbers it (its slot). The first unpack while nothing
// is recomputed runs the function again, whose own nodes' functions become the recomputed
// slots; each unpack takes its slot's saved tensors.
struct Frame {
  struct Slot {
    std::shared_ptr<NodeFunction> twin;  // kept after its unpack only while the graph is retained
    bool taken = false;
  };
  spec::CaptureId capture = 0;
  bool fp8 = false;  // fp8_enabled read before the function ran
  bool closed = false;
  bool released = false;
  int live_nodes = 0;       // its own nodes, not yet dropped
  std::uint32_t slots = 0;  // numbered by the forward
  CheckpointFunction function;
  Matrix input;
  std::vector<Slot> recomputed;
};

// The FP8 meta of one module (spec §2.3): forward slots input (0) and weight (1), backward
// slot grad_output (0), and what the semantics keep beside it.
struct ModuleMeta {
  std::string name;
  kernels::ScalingMeta forward;
  kernels::ScalingMeta backward;
  std::deque<kernels::ScalingMeta> stash;       // upstream / pr3213: the module's deque
  std::optional<kernels::ScalingMeta> updated;  // m.updated_amax_history_fwd
};

class Context : private statemachine::Hooks {
 public:
  explicit Context(Recipe recipe, std::unique_ptr<Backend> backend = make_cpu_backend(),
                   spec::Semantics semantics = spec::Semantics::Fp8sm, AmaxReductionGroup* group = nullptr);
  ~Context() override;
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  // One backward pass over what the step recorded, from the gradient of the last output.
  // Returns the gradient of the first input. Without retain_graph the graph is freed: the next
  // forward records a new one. Throws MisuseError if nothing was recorded, the graph was
  // freed, or a checkpoint's function is running.
  Matrix backward(const Matrix& grad_output, bool retain_graph = false);
  // Closes the graph recorded so far under `tape` (a finished micro-batch loss; a graph saved
  // before under that name is dropped); the next forward records a new graph. Saved graphs
  // outlive end_step. backward(tape, ...) runs a pass over one, as backward(...) does over
  // the current graph. Throws MisuseError inside a checkpoint's function, or for an unknown tape.
  void save_graph(const std::string& tape);
  Matrix backward(const std::string& tape, const Matrix& grad_output, bool retain_graph = false);
  // Ends the training step: what was recorded and not backpropagated is dropped. Returns the
  // step's update counts. Throws MisuseError while a scope is open.
  StepCounts end_step();
  StepCounts counts() const { return counts_; }

  // Where the tape is now. A program that catches an exception thrown by its own forward hands
  // the mark taken before it to discard_since: what was recorded since is never
  // backpropagated (torch would never reach it), and checkpoints it held are released.
  struct TapeMark {
    std::uint64_t generation;
    std::size_t size;
  };
  TapeMark mark() const { return {current_graph_->generation, current_graph_->nodes.size()}; }
  void discard_since(const TapeMark& mark);
  // Whether the current graph holds anything backward would run.
  bool has_recorded() const { return !graph_.nodes.empty(); }
  bool has_recorded(const std::string& tape) const;
  // Whether a checkpoint's recompute is running (its function is being called again).
  bool in_recompute() const { return !recomputing_.empty(); }

  // Every table event fired from now on is appended to `log` (nullptr stops): for benchmarks
  // and tests that replay a step's events on a bare machine.
  void log_events(std::vector<spec::AnyEvent>* log) { event_log_ = log; }

  // What the machine says now.
  bool grad_enabled() const { return machine_.grad_enabled(); }
  bool fp8_enabled() const { return machine_.fp8_enabled(); }
  int autocast_depth() const { return machine_.autocast_depth(); }
  const statemachine::Machine& machine() const { return machine_; }

  const Recipe& recipe() const { return recipe_; }
  Backend& backend() { return *backend_; }
  const ModuleMeta& meta(spec::ModuleId m) const { return modules_.at(m); }
  std::size_t module_count() const { return modules_.size(); }
  // The registry of the forward and backward keys, in registration order.
  const std::vector<spec::ModuleId>& registry() const { return registry_; }

 private:
  friend class Linear;
  friend class Autocast;
  friend class NoGrad;
  friend class ReentrantNode;
  friend class LinearNode;
  friend Matrix checkpoint(Context&, CheckpointMode, const CheckpointFunction&, const Matrix&);
  friend Matrix relu(Context&, const Matrix&);

  enum class ScopeKind { Autocast, NoGrad, Checkpoint };
  struct OpenScope {
    ScopeKind kind;
    std::size_t id;
  };
  // Where a recorded node's saved tensors go (torch's saved-tensor hooks, innermost only):
  // into the next slot of a frame whose forward runs, or into a recompute's slots.
  struct PackTarget {
    std::shared_ptr<Frame> frame;
    bool recompute = false;
  };

  // Modules.
  spec::ModuleId add_module(const std::string& name);
  // A module forward (spec §3.2): prepare, the casts (`compute(fp8)` returns the output and
  // the node's function), the claim with the node's recording, end_forward.
  using ModuleCompute = std::function<std::pair<Matrix, std::shared_ptr<NodeFunction>>(bool fp8)>;
  Matrix run_module(spec::ModuleId m, const ModuleCompute& compute);
  ModuleMeta& meta(spec::ModuleId m) { return modules_.at(m); }
  void record_function(std::shared_ptr<NodeFunction> function);

  // Scopes.
  std::size_t open_scope(ScopeKind kind);
  void close_scope(ScopeKind kind, std::size_t id);  // checks order, pops; no events
  static const char* scope_name(ScopeKind kind);
  void enter_autocast(bool enabled);
  void exit_autocast();
  Matrix run_reentrant(const CheckpointFunction& function, const Matrix& input);
  Matrix run_non_reentrant(const CheckpointFunction& function, const Matrix& input);

  // Backward engine.
  Matrix run_backward(Graph& graph, const Matrix& grad_output, bool retain_graph, const std::string& what);
  Matrix backpropagate(const std::vector<TapeNode>& nodes, Matrix grad, Graph* retained);
  void unpack_saved(const TapeNode& node, bool keep);
  Matrix recompute(spec::CaptureId capture, bool fp8, const CheckpointFunction& function, const Matrix& input,
                   Graph& graph, PackTarget target);
  void recompute_frame(const std::shared_ptr<Frame>& frame);
  void record(TapeNode node);
  void drop_nodes(const std::vector<TapeNode>& nodes);
  void release(spec::CaptureId capture);
  void release(Frame& frame);

  template <class Event>
  void fire(const Event& event);  // throws StateError if the table raised

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

  Recipe recipe_;
  std::unique_ptr<Backend> backend_;
  AmaxReductionGroup* group_;
  statemachine::Machine machine_;

  std::vector<ModuleMeta> modules_;
  std::vector<spec::ModuleId> registry_;
  std::map<spec::CaptureId, std::vector<std::pair<spec::ModuleId, kernels::ScalingMeta>>> checkpoint_stash_;
  std::optional<bool> last_claim_;

  std::vector<OpenScope> scopes_;
  std::size_t next_scope_ = 0;
  int checkpoints_open_ = 0;  // checkpoint scopes among scopes_
  // Modules run in FP8 in the current region (outermost autocast, or recompute): TE forbids a
  // second run while reduce_amax is set, since row 0 would mix two casts of one quantizer.
  std::vector<std::set<spec::ModuleId>> region_runs_;

  Graph graph_;
  Graph* current_graph_ = &graph_;
  std::map<std::string, Graph> tapes_;
  std::vector<PackTarget> packs_;  // innermost last
  spec::CaptureId next_capture_ = 0;
  std::uint64_t next_generation_ = 1;
  std::set<spec::CaptureId> released_;  // reentrant checkpoints released this step
  std::vector<spec::CaptureId> recomputing_;  // checkpoints whose recompute is running, innermost last
  StepCounts counts_;
  std::vector<spec::AnyEvent>* event_log_ = nullptr;
};

}  // namespace fp8sm::runtime
