// Checks the invariants of spec §5 (all but I8, which compares two runs: see scenario_run.hpp)
// while the interpreter runs a program, and keeps the symbolic FP8 meta of every module.
//
// The checker judges from what it observes (hooks, extents, the machine's visible state),
// never from the table's own decisions: an expectation such as "this autocast exit must make
// exactly one forward update" is computed here from depth, enabled and grad mode. The program's
// grad mode and the length of upstream's FIFO are followed from the events fired, not read
// from the table's data, so that a table bug cannot corrupt a check and what it checks alike.
#pragma once

#include <array>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "explorer/symbolic_meta.hpp"
#include "statemachine/encoder.hpp"
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

// What the checker found in one step.
struct StepVerdict {
  spec::InvariantSet violations;
  std::map<spec::Invariant, std::string> first_reason;  // one sentence per violated invariant
  std::vector<ModuleNumerics> numerics;                 // per module, at the step's end
};

// What the checker carries between statements: the ownership scopes and live owners (I3); the
// symbolic metas, stashes and checkpoint extents (I4, I5, I8, I9). I1, I2, I6 and I7 are judged
// within a statement, from the machine and the events alone, and carry nothing.
struct CheckerCarried {
  bool owners = true;
  bool numerics_and_stashes = true;
  bool program_grad = true;  // I1: the grad mode the program set, from the events
};

class InvariantChecker : public statemachine::Observer {
 public:
  const std::vector<StepVerdict>& verdicts() const { return verdicts_; }

  // For the exhaustive explorer, which keeps no history: the verdicts of finished steps, and
  // what the step in progress has violated so far, handed over and forgotten.
  std::vector<StepVerdict> take_verdicts() { return std::exchange(verdicts_, {}); }
  StepVerdict take_current();

  // What the checks of `checks` need carried between statements (CheckerCarried).
  using Carried = CheckerCarried;
  static Carried carried_for(const spec::InvariantSet& checks);

  // Between statements: everything later checks of `carried` depend on, packed.
  void encode(statemachine::Encoder& out, Carried carried = Carried{}) const;

  // Observer
  void attach(const statemachine::Machine& machine) override { machine_ = &machine; }
  void step_begin(int step) override;
  void step_end(int step) override;
  void top_level_statement_done() override;
  void event_fired(const spec::AnyEvent& event,
                   const std::optional<spec::RaisedException>& raised) override;
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
  void checkpoint_dropped(CaptureId c) override;

 private:
  struct StashEntry {
    SymbolicMeta value;
    CaptureId pushed_by = 0;
    bool pushed_by_checkpoint = false;
    int step = 0;
  };
  struct ModuleState {
    ModuleNumerics numerics;
    std::deque<StashEntry> stash;
    SymbolicMeta saved_for_restore;
    bool registered = false;
  };
  // A checkpoint's original forward or a recompute, innermost last.
  struct Extent {
    CaptureId capture = 0;
    bool recompute = false;
    std::map<ModuleId, int> occurrences;           // recompute: computations seen so far
    std::map<ModuleId, SymbolicMeta> before_pop;  // recompute: live meta before its first pop
  };
  // I3: an outermost user autocast or a recompute.
  struct OwnershipScope {
    bool recompute = false;
    bool bit_at_entry = false;
    std::vector<NodeId> owners;
  };
  struct Revival {  // F went false -> true inside a scope whose owners were these
    std::vector<NodeId> owners;
  };

  void violate(spec::Invariant invariant, std::string reason);
  ModuleState& module(ModuleId m);
  bool bit() const { return machine_->ownership_available(); }

  const statemachine::Machine* machine_ = nullptr;
  int step_ = 0;
  StepVerdict verdict_;
  std::vector<StepVerdict> verdicts_;
  std::vector<ModuleState> modules_;

  // I1; the grad mode the program set (its no_grad blocks), the one before each push
  std::vector<bool> program_grad_ = {true};
  bool in_exit_ = false;
  bool exit_expects_update_ = false;
  int exit_updates_ = 0;
  // I2
  bool in_pass_ = false;
  int pass_fp8_backwards_ = 0;
  int pass_updates_ = 0;
  // I3
  bool bit_before_event_ = false;
  std::vector<OwnershipScope> scopes_;
  std::vector<OwnershipScope> closed_scopes_;  // judged at step end, when liveness is known
  std::vector<Revival> revivals_;
  std::vector<bool> node_live_;  // index = NodeId
  // I4 / I5
  std::vector<Extent> extents_;
  std::map<CaptureId, std::map<ModuleId, std::vector<std::uint64_t>>> original_seen_;
  std::optional<CaptureId> installed_from_;
  int fifo_length_ = 0;  // upstream: captured bits not yet installed by a recompute
  // Stashes kept per checkpoint instance (fp8sm), and checkpoints the interpreter dropped.
  std::map<CaptureId, std::vector<std::pair<ModuleId, SymbolicMeta>>> checkpoint_stash_;
  std::set<CaptureId> dropped_;
};

}  // namespace fp8sm::explorer
