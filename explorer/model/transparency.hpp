// I8, checkpoint transparency, for one step: the step of the program against the same step of
// the program without its checkpoints (counts, escaped exceptions, every module's numerics).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>

#include "explorer/model/verdict.hpp"
#include "interpreter/interpreter.hpp"
#include "spec/step_result.hpp"

namespace fp8sm::explorer {

// What one step of a run gave (a view of its counts and escaped exceptions).
struct StepOutcome {
  std::uint32_t forward_updates = 0;
  std::uint32_t backward_updates = 0;
  const spec::RaisedException* raised = nullptr;
  std::size_t raised_count = 0;
};
inline StepOutcome outcome(const interpreter::StepTally& t) {
  return {t.forward_updates, t.backward_updates, t.raised.begin(), t.raised.size()};
}
inline StepOutcome outcome(const spec::StepResult& r) {
  return {static_cast<std::uint32_t>(r.forward_updates), static_cast<std::uint32_t>(r.backward_updates),
          r.raised.data(), r.raised.size()};
}

// Whether two runs' modules have the same forward and backward numerics; a module one run
// never touched compares as untouched.
template <class A, class B>
bool same_numerics(const A& a, const B& b) {
  const std::size_t n = std::max<std::size_t>(a.size(), b.size());
  using Meta = decltype(a.begin()->forward);
  for (std::size_t m = 0; m < n; ++m) {
    const Meta none{};
    const Meta& af = m < a.size() ? a[m].forward : none;
    const Meta& ab = m < a.size() ? a[m].backward : none;
    const Meta& bf = m < b.size() ? b[m].forward : none;
    const Meta& bb = m < b.size() ? b[m].backward : none;
    if (af != bf || ab != bb) return false;
  }
  return true;
}

struct TransparencyJudgement {
  std::optional<Violation> violation;
  bool later_steps_comparable = true;
};

// `diverged`: the program has diverged from its reference (spec::ReferenceDivergence:
// raise recompute, recompute_uncaptured, a backward of a freed tape), so it is not
// the same program as its reference: I8 does not apply.
TransparencyJudgement judge_transparency(const StepOutcome& got, const StepOutcome& want, bool numerics_equal,
                                         bool diverged);

}  // namespace fp8sm::explorer
