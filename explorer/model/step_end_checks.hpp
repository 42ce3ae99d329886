// I6's and I7's observer: what the machine must look like after a top-level statement (no
// checkpoint flags, FP8 off, the ownership bit down outside autocast) and at a step's end
// (autocast depth 0). It reads the machine's region states, carries nothing.
#pragma once

#include "explorer/model/observer_context.hpp"

namespace fp8sm::explorer {

template <class S>
class StepEndChecks {
 public:
  void top_level_statement_done(const ObserverContext<S>& ctx) const {
    const auto& machine = *ctx.machine;
    if (machine.checkpoint_phase() != statemachine::CheckpointPhase::Outside) {
      ctx.violate(spec::Invariant::I6, Reason::CheckpointFlagsLeftSet);
    }
    if (machine.fp8_enabled()) ctx.violate(spec::Invariant::I6, Reason::Fp8LeftEnabled);
    if (machine.autocast_depth() == 0 && machine.ownership_available()) {
      ctx.violate(spec::Invariant::I6, Reason::BitLeftSet);
    }
  }
  void step_end(const ObserverContext<S>& ctx) const {
    if (ctx.machine->autocast_depth() != 0) ctx.violate(spec::Invariant::I7, Reason::AutocastDepthAtStepEnd);
  }
};

}  // namespace fp8sm::explorer
