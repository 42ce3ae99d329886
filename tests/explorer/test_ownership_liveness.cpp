// I3's live owners (spec §5): an owner stays live while its node may still be backpropagated,
// and after its backward ran (it made its update, so a second owner in its scope would make
// another); only a node dropped unused is not live. Found by running the programs of the
// depth-5 search on TE (scripts/te-explore.sh): TE's observer counted L0 below live, the model
// had discarded it with the step's graph when the exception ended the step.
#include <gtest/gtest.h>

#include <memory>

#include "explorer/model/model_state.hpp"
#include "scenario_helpers.hpp"

namespace fp8sm {
namespace {

using spec::Invariant;
using spec::Semantics;

// L0 claims inside the inner autocast and its backward runs (retained graph); the raise then
// unwinds the inner autocast, whose exit puts back the bit it entered with (upstream, spec
// §3.1): ownership revived inside the outer scope while its owner, whose update was made, is
// live. The PR's exit merges the bits (F := snap.F AND F) and revives nothing.
constexpr const char* kRevivedAfterTheOwnersBackward =
    "autocast on { autocast on { linear L0; backward retain; raise always } }";
// The same without the backward: L0 is dropped unused with the step's graph, so the revival
// finds no live owner.
constexpr const char* kRevivedAfterTheOwnerWasDropped = "autocast on { autocast on { linear L0; raise always } }";

// L0 claims inside the inner autocast, whose exit revives the bit. The backward enters L0's
// backward, whose unpack recomputes the frame: the recompute's first L0 takes the one stash
// entry, the second finds none (IndexError). L0's backward never completed, so the pass that
// failed (with or without retain) leaves it dropped unused when the exception ends the step:
// no live owner for the revival. Found on depth-6 programs: without retain the model kept the
// failed pass's nodes as live owners (dropped, not discarded); TE's observer, with retain,
// counted L0's backward as run from its first line.
constexpr const char* kOwnersBackwardFailedAtItsUnpack =
    "autocast off { checkpoint nonreentrant { linear L0; autocast on { linear L0 } }; backward }";
constexpr const char* kOwnersBackwardFailedAtItsUnpackRetained =
    "autocast off { checkpoint nonreentrant { linear L0; autocast on { linear L0 } }; backward retain }";

bool violates_i3(const char* text, Semantics s) {
  const explorer::ScenarioReport report = test_support::run_text(text, s);
  EXPECT_EQ(report.steps.size(), 1u);
  EXPECT_EQ(report.steps.at(0).raised.size(), 1u);
  return report.steps.at(0).violations.contains(Invariant::I3);
}

// The search's state judges as `explorer run` does, statement by statement and at the end.
bool search_violates_i3(const char* text, Semantics s) {
  explorer::ModelRunner runner(s, {}, true);
  auto state = std::make_unique<explorer::ModelState>();
  runner.initial(*state);
  bool found = false;
  for (const spec::Statement& st : spec::parse_scenario(text).statements) {
    found = runner.apply(*state, st).contains(Invariant::I3) || found;
  }
  return runner.end_here(*state).contains(Invariant::I3) || found;
}

TEST(OwnershipLiveness, AnOwnerWhoseBackwardRanStaysLiveWhenAnExceptionEndsTheStep) {
  EXPECT_TRUE(violates_i3(kRevivedAfterTheOwnersBackward, Semantics::Upstream));
  EXPECT_TRUE(search_violates_i3(kRevivedAfterTheOwnersBackward, Semantics::Upstream));
  EXPECT_FALSE(violates_i3(kRevivedAfterTheOwnersBackward, Semantics::Pr3213));
}

TEST(OwnershipLiveness, AnOwnerDroppedUnusedIsNotLive) {
  EXPECT_FALSE(violates_i3(kRevivedAfterTheOwnerWasDropped, Semantics::Upstream));
  EXPECT_FALSE(search_violates_i3(kRevivedAfterTheOwnerWasDropped, Semantics::Upstream));
}

TEST(OwnershipLiveness, AnOwnerWhoseBackwardFailedAtItsUnpackIsNotLive) {
  for (const char* text : {kOwnersBackwardFailedAtItsUnpack, kOwnersBackwardFailedAtItsUnpackRetained}) {
    const explorer::ScenarioReport report = test_support::run_text(text, Semantics::Upstream);
    ASSERT_EQ(report.steps.size(), 1u) << text;
    ASSERT_EQ(report.steps[0].raised.size(), 1u) << text;
    EXPECT_EQ(report.steps[0].raised[0].kind, spec::ExceptionKind::IndexError) << text;
    EXPECT_EQ(report.steps[0].backward_updates, 0) << text;
    EXPECT_FALSE(violates_i3(text, Semantics::Upstream)) << text;
    EXPECT_FALSE(search_violates_i3(text, Semantics::Upstream)) << text;
  }
}

}  // namespace
}  // namespace fp8sm
