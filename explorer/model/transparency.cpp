#include "explorer/model/transparency.hpp"

#include <algorithm>

namespace fp8sm::explorer {

namespace {

bool only_user_exceptions(const StepOutcome& r) {
  return std::all_of(r.raised, r.raised + r.raised_count,
                     [](const spec::RaisedException& e) { return e.kind == spec::ExceptionKind::UserError; });
}

bool same_raised(const StepOutcome& a, const StepOutcome& b) {
  return a.raised_count == b.raised_count && std::equal(a.raised, a.raised + a.raised_count, b.raised);
}

Violation i8(Reason reason) {
  Violation v;
  v.invariant = spec::Invariant::I8;
  v.reason = reason;
  return v;
}

}  // namespace

TransparencyJudgement judge_transparency(const StepOutcome& got, const StepOutcome& want, bool numerics_equal,
                                         bool diverged) {
  TransparencyJudgement judgement;
  if (diverged) {
    // raise recompute / recompute_uncaptured, or a backward of a freed tape, make the program
    // differ from its reference by design (even where a try hides it): nothing to compare.
    judgement.later_steps_comparable = false;
    return judgement;
  }
  if (!same_raised(got, want)) {
    // The runs diverge here: later steps start from different states.
    judgement.later_steps_comparable = false;
    if (only_user_exceptions(got) && only_user_exceptions(want)) return judgement;
    judgement.violation = i8(Reason::TransparencyRaises);
  } else if (got.forward_updates != want.forward_updates || got.backward_updates != want.backward_updates) {
    Violation v = i8(Reason::TransparencyCounts);
    v.a = static_cast<std::uint16_t>(got.forward_updates);
    v.b = static_cast<std::uint16_t>(got.backward_updates);
    v.c = static_cast<std::uint16_t>(want.forward_updates);
    v.d = static_cast<std::uint16_t>(want.backward_updates);
    judgement.violation = v;
  } else if (!numerics_equal) {
    judgement.violation = i8(Reason::TransparencyNumerics);
  }
  return judgement;
}

}  // namespace fp8sm::explorer
