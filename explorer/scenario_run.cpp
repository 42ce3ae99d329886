#include "explorer/scenario_run.hpp"

#include <algorithm>
#include <string>

#include "spec/scenario_transform.hpp"
#include "statemachine/interpreter.hpp"

namespace fp8sm::explorer {

namespace {

struct Run {
  std::vector<spec::StepResult> steps;
  std::vector<StepVerdict> verdicts;
};

Run run_checked(const spec::Program& program, spec::Semantics semantics) {
  InvariantChecker checker;
  statemachine::Interpreter interpreter(semantics, &checker);
  interpreter.run(program);
  return Run{interpreter.steps(), checker.verdicts()};
}

bool only_user_exceptions_differ(const spec::StepResult& a, const spec::StepResult& b) {
  auto user_only = [](const spec::StepResult& r) {
    return std::all_of(r.raised.begin(), r.raised.end(),
                       [](const spec::RaisedException& e) { return e.kind == "UserError"; });
  };
  return user_only(a) && user_only(b);
}

// I8: step by step, the same counts and the same symbolic scaling state as the reference,
// for as long as both runs are the same program (see behaves_differently_in_recompute).
void judge_transparency(const spec::Program& program, Run& run, const Run& reference) {
  const bool recompute_specific = spec::behaves_differently_in_recompute(program);
  const std::size_t steps = std::min(run.steps.size(), reference.steps.size());
  for (std::size_t s = 0; s < steps; ++s) {
    const spec::StepResult& got = run.steps[s];
    const spec::StepResult& want = reference.steps[s];
    StepVerdict& verdict = run.verdicts[s];
    std::string reason;
    if (got.raised != want.raised) {
      if (recompute_specific || only_user_exceptions_differ(got, want)) return;
      reason = "raises where the program without checkpoints does not (or the reverse)";
    } else if (got.forward_updates != want.forward_updates || got.backward_updates != want.backward_updates) {
      reason = "counts " + std::to_string(got.forward_updates) + "/" + std::to_string(got.backward_updates) +
               " where the program without checkpoints gives " + std::to_string(want.forward_updates) + "/" +
               std::to_string(want.backward_updates);
    } else if (verdict.numerics != reference.verdicts[s].numerics) {
      reason = "amax histories or scales differ from the program without checkpoints";
    }
    if (!reason.empty()) {
      if (!verdict.violations.contains(spec::Invariant::I8)) verdict.first_reason[spec::Invariant::I8] = reason;
      verdict.violations.add(spec::Invariant::I8);
    }
    if (!got.raised.empty() || !want.raised.empty()) {
      if (got.raised != want.raised) return;  // the runs diverged: later steps are not comparable
    }
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
