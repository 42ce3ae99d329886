#include "explorer/transparency.hpp"

#include <algorithm>

namespace fp8sm::explorer {

namespace {

bool only_user_exceptions(const spec::StepResult& r) {
  return std::all_of(r.raised.begin(), r.raised.end(),
                     [](const spec::RaisedException& e) { return e.kind == spec::ExceptionKind::UserError; });
}

// Modules the reference never touched compare as untouched.
bool same_numerics(std::vector<ModuleNumerics> a, std::vector<ModuleNumerics> b) {
  const std::size_t n = std::max(a.size(), b.size());
  a.resize(n);
  b.resize(n);
  return a == b;
}

}  // namespace

TransparencyJudgement judge_transparency(const spec::StepResult& got, const std::vector<ModuleNumerics>& got_numerics,
                                         const spec::StepResult& want, const std::vector<ModuleNumerics>& want_numerics,
                                         bool diverged) {
  TransparencyJudgement judgement;
  if (diverged) {
    // raise recompute / recompute_uncaptured, or a backward of a freed tape, make the program
    // differ from its reference by design (even where a try hides it): nothing to compare.
    judgement.later_steps_comparable = false;
    return judgement;
  }
  if (got.raised != want.raised) {
    // The runs diverge here: later steps start from different states.
    judgement.later_steps_comparable = false;
    if (only_user_exceptions(got) && only_user_exceptions(want)) return judgement;
    judgement.violation = "raises where the program without checkpoints does not (or the reverse)";
  } else if (got.forward_updates != want.forward_updates || got.backward_updates != want.backward_updates) {
    judgement.violation = "counts " + std::to_string(got.forward_updates) + "/" + std::to_string(got.backward_updates) +
                          " where the program without checkpoints gives " + std::to_string(want.forward_updates) +
                          "/" + std::to_string(want.backward_updates);
  } else if (!same_numerics(got_numerics, want_numerics)) {
    judgement.violation = "amax histories or scales differ from the program without checkpoints";
  }
  return judgement;
}

}  // namespace fp8sm::explorer
