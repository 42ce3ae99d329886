// The explorer catches a deliberately broken semantics: this test is linked against a build of
// the table with FP8SM_TEST_ONLY_BREAK_FP8SM, where fp8sm lost one guard (a recompute's own
// autocast updates again, as upstream's does).
#include <gtest/gtest.h>

#include "explorer/search/search.hpp"
#include "scenario_helpers.hpp"

namespace fp8sm {
namespace {

TEST(BrokenSemantics, TheSearchFindsTheDuplicateForwardUpdate) {
  explorer::SearchOptions options;
  options.semantics = spec::Semantics::Fp8sm;
  options.depth = 4;
  const auto result = explorer::search(options);
  bool found = false;
  for (const auto& c : result.counterexamples) {
    if (c.invariant != spec::Invariant::I1) continue;
    found = true;
    EXPECT_TRUE(test_support::replays(c, spec::Semantics::Fp8sm));
    // Replayed, the counterexample makes a second forward update.
    const auto report = explorer::run_scenario(c.program, spec::Semantics::Fp8sm);
    int forward = 0;
    for (const auto& step : report.steps) forward += step.forward_updates;
    EXPECT_GE(forward, 2) << spec::print_scenario(c.program);
  }
  EXPECT_TRUE(found);
}

TEST(BrokenSemantics, TheSeedRowShowsIt) {
  const auto report = explorer::run_scenario(test_support::catalogue_program("reentrant-single-3-layers"),
                                             spec::Semantics::Fp8sm);
  EXPECT_EQ(report.steps.at(0).forward_updates, 2);
  EXPECT_TRUE(report.steps.at(0).violations.contains(spec::Invariant::I1));
}

}  // namespace
}  // namespace fp8sm
