#include "explorer/model/scenario_run.hpp"

#include <algorithm>
#include <string>

#include "explorer/model/transparency.hpp"
#include "interpreter/interpreter.hpp"
#include "spec/scenario_transform.hpp"

namespace fp8sm::explorer {

namespace {

struct Run {
  std::vector<spec::StepResult> steps;
  std::vector<StepVerdict> verdicts;
  std::vector<bool> executed;  // per statement: not skipped
  std::vector<bool> input_lacks_grad;  // per statement: run with grad on, on a value that does not require it
};

Run run_checked(const spec::Program& program, spec::Semantics semantics) {
  InvariantChecker<statemachine::GrowableStorage> checker;
  interpreter::Interpreter interpreter(semantics, &checker);
  checker.attach(interpreter.machine());
  std::vector<bool> executed, input_lacks_grad;
  for (const spec::Statement& s : program.statements) {
    executed.push_back(!interpreter.skipping());
    input_lacks_grad.push_back(interpreter.input_lacks_grad());
    interpreter.feed(s);
  }
  interpreter.end_of_file();
  return Run{interpreter.steps(), checker.verdicts(), std::move(executed), std::move(input_lacks_grad)};
}

// I8: step by step, until the runs diverge.
void judge_transparency(const spec::Program& program, Run& run, const Run& reference) {
  const std::vector<bool> diverged = spec::diverged_steps(program, run.executed, run.input_lacks_grad);
  const std::size_t steps = std::min(run.steps.size(), reference.steps.size());
  for (std::size_t s = 0; s < steps; ++s) {
    StepVerdict& verdict = run.verdicts[s];
    const TransparencyJudgement judgement = explorer::judge_transparency(
        outcome(run.steps[s]), outcome(reference.steps[s]),
        same_numerics(verdict.numerics, reference.verdicts[s].numerics), s < diverged.size() && diverged[s]);
    if (judgement.violation) {
      if (!verdict.violations.contains(spec::Invariant::I8)) {
        verdict.first_reason[spec::Invariant::I8] = describe(*judgement.violation);
      }
      verdict.violations.add(spec::Invariant::I8);
    }
    if (!judgement.later_steps_comparable) return;
  }
}

}  // namespace

ScenarioReport run_scenario(const spec::Program& program, spec::Semantics semantics) {
  Run run = run_checked(program, semantics);
  const Run reference = run_checked(spec::without_checkpoints(program), semantics);
  judge_transparency(program, run, reference);
  ScenarioReport report;
  report.semantics = semantics;
  for (std::size_t s = 0; s < run.steps.size(); ++s) {
    run.steps[s].violations = run.verdicts[s].violations;
  }
  report.steps = std::move(run.steps);
  report.verdicts = std::move(run.verdicts);
  report.reference = reference.steps;
  return report;
}

}  // namespace fp8sm::explorer
