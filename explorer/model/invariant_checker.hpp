// Checks the invariants of spec §5 (all but I8's comparison of two runs: transparency.hpp)
// while the interpreter runs a program, with one observer per invariant, each owning its part
// of the state (observer_state.hpp):
//
//   ForwardUpdates      I1    forward_updates.hpp
//   BackwardPasses      I2    backward_passes.hpp
//   OwnershipScopes     I3    ownership_scopes.hpp
//   CheckpointNumerics  I4 I5 I9, and the numerics I8 compares    checkpoint_numerics.hpp
//   StepEndChecks       I6 I7 step_end_checks.hpp
//
// The observers judge from what they observe (hooks, extents, the machine's region states),
// never from the table's own decisions or data: an expectation such as "this autocast exit
// must make exactly one forward update" is computed from depth, enabled and the program's
// grad mode, which, like upstream's FIFO and exception kinds, is followed from the events.
//
// A checker runs the observers of the invariants it checks and no others. It owns its state
// (explorer run, the tests: every invariant) or is bound to one inside the exhaustive search's
// flat state values (bind()).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "explorer/model/backward_passes.hpp"
#include "explorer/model/checkpoint_numerics.hpp"
#include "explorer/model/forward_updates.hpp"
#include "explorer/model/observer_state.hpp"
#include "explorer/model/ownership_scopes.hpp"
#include "explorer/model/step_end_checks.hpp"
#include "explorer/model/verdict.hpp"
#include "spec/invariants.hpp"
#include "statemachine/machine.hpp"
#include "statemachine/observer.hpp"

namespace fp8sm::explorer {

using statemachine::CaptureId;
using statemachine::ModuleId;
using statemachine::NodeId;

struct ModuleNumerics {
  SymbolicMeta forward;
  SymbolicMeta backward;
  bool operator==(const ModuleNumerics& o) const { return forward == o.forward && backward == o.backward; }
};

// What the checker found in one step (explorer run's report).
struct StepVerdict {
  spec::InvariantSet violations;
  std::map<spec::Invariant, std::string> first_reason;  // one sentence per violated invariant
  std::vector<ModuleNumerics> numerics;                 // per module, at the step's end
};

// Which observers run, and so which parts of ObserverState a state carries.
struct CheckedObservers {
  bool forward_updates = true;  // I1: the program's grad mode
  bool backward_passes = true;  // I2
  bool ownership = true;        // I3: ownership scopes and live owners
  bool numerics = true;         // I4 I5 I8 I9: symbolic metas, stashes and checkpoint extents
  bool step_end = true;         // I6 I7
  static CheckedObservers for_checks(const spec::InvariantSet& checks);  // empty: all
  // Whether some check of these judges a step's end (I3's owners, I4's leftovers, I7's depth):
  // if not, ending a program can violate nothing they check.
  bool judge_step_ends() const { return ownership || numerics || step_end; }
};

template <class S>
class InvariantChecker : public statemachine::Observer {
 public:
  static ObserverState<S> initial_state();

  // A checker of every invariant with its own state, keeping a verdict per step.
  InvariantChecker();
  // A checker of `observers`, bound to `state`, keeping only the current verdict.
  InvariantChecker(ObserverState<S>& state, CheckedObservers observers);
  InvariantChecker(const InvariantChecker&) = delete;
  InvariantChecker& operator=(const InvariantChecker&) = delete;

  // The machine the program runs on (read only), before anything is observed.
  void attach(const statemachine::BasicMachine<S>& machine) { context_.machine = &machine; }
  // From now on the checker observes into `state` (between two statements).
  void bind(ObserverState<S>& state);

  const CheckedObservers& observers() const { return observers_; }
  // Where violations go from now on (the search: one verdict per statement, which it clears);
  // by default the checker's own, per step.
  void report_to(Verdict& verdict) { context_.verdict = &verdict; }
  // Per finished step (an owning checker only).
  const std::vector<StepVerdict>& verdicts() const { return verdicts_; }
  // Every module's numerics now (the numerics observer's).
  const NumericsState<S>& numerics() const { return *numerics_; }

  // Observer
  void step_begin(int step) override;
  void step_end(int step) override;
  void top_level_statement_done() override;
  void event_fired(const spec::AnyEvent& event, const std::optional<spec::RaisedException>& raised) override;
  void autocast_exit_begin(bool user) override;
  void autocast_exit_end() override;
  void module_computed(ModuleId m, bool recompute) override;
  void node_recorded(NodeId node, ModuleId m, bool owner, bool live) override;
  void node_discarded(NodeId node) override;
  void backward_pass_begin() override;
  void backward_pass_end(bool completed) override;
  void module_backward(ModuleId m, bool fp8) override;
  void checkpoint_forward_begin(CaptureId c) override;
  void checkpoint_forward_end(CaptureId c, bool exceptional) override;
  void recompute_begin(CaptureId c) override;
  void recompute_end(CaptureId c) override;
  void checkpoint_dropped(CaptureId c) override;

  // Hooks
  void forward_update() override;
  void backward_update() override;
  void discard_forward_amax() override;
  void registered(ModuleId m) override;
  void stash(ModuleId m) override;
  void save_for_restore(ModuleId m) override;
  void pop_stash(ModuleId m) override;
  void restore(ModuleId m) override;
  void ownership_installed(CaptureId c) override;
  void stash_for(ModuleId m, CaptureId c) override;
  void replay_stash(ModuleId m, CaptureId c, unsigned occurrence) override;
  void release_stash(CaptureId c) override;

 private:
  ObserverState<S> own_;
  CheckedObservers observers_;
  bool keep_steps_ = false;
  Verdict verdict_;
  ObserverContext<S> context_;
  ForwardUpdates<S> forward_updates_;
  BackwardPasses<S> backward_passes_;
  OwnershipScopes<S> ownership_;
  CheckpointNumerics<S> numerics_observer_;
  StepEndChecks<S> step_end_checks_;
  const NumericsState<S>* numerics_ = nullptr;
  std::vector<StepVerdict> verdicts_;
};

}  // namespace fp8sm::explorer
