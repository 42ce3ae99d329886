// I8, checkpoint transparency, for one step: the step of the program against the same step of
// the program without its checkpoints.
#pragma once

#include <string>
#include <vector>

#include "explorer/invariant_checker.hpp"
#include "spec/step_result.hpp"

namespace fp8sm::explorer {

struct TransparencyJudgement {
  std::string violation;  // empty: none
  bool later_steps_comparable = true;
};

// `diverged`: the program has diverged from its reference (spec::ReferenceDivergence:
// raise recompute, recompute_uncaptured, a backward of a freed tape), so it is not
// the same program as its reference: I8 does not apply.
TransparencyJudgement judge_transparency(const spec::StepResult& got, const std::vector<ModuleNumerics>& got_numerics,
                                         const spec::StepResult& want, const std::vector<ModuleNumerics>& want_numerics,
                                         bool diverged);

}  // namespace fp8sm::explorer
