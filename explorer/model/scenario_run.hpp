// Runs one scenario under one semantics and judges every step against the invariants,
// including I8, which runs the program a second time with its checkpoints removed.
#pragma once

#include <vector>

#include "explorer/model/invariant_checker.hpp"
#include "spec/scenario.hpp"
#include "spec/semantics.hpp"
#include "spec/step_result.hpp"

namespace fp8sm::explorer {

struct ScenarioReport {
  spec::Semantics semantics = spec::Semantics::Upstream;
  std::vector<spec::StepResult> steps;     // counts, raised, violations
  std::vector<StepVerdict> verdicts;       // the reasons, step by step
  std::vector<spec::StepResult> reference; // the program without checkpoints
};

ScenarioReport run_scenario(const spec::Program& program, spec::Semantics semantics);

}  // namespace fp8sm::explorer
