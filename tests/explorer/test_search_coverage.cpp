// `explorer --depth N --coverage`: the table rows the exhaustive search fires, counted per
// transition, the same at any thread count (the depth-5 verdict on fp8sm's rows is in
// test_search_coverage_depth5.cpp, with the exhaustive tests).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "explorer/report/coverage_report.hpp"
#include "explorer/report/row_guards.hpp"
#include "explorer/report/search_report.hpp"
#include "explorer/search/search.hpp"
#include "scenario_helpers.hpp"

namespace fp8sm {
namespace {

using statemachine::Machine;

explorer::SearchResult search_with_coverage(spec::Semantics semantics, int depth, int threads = 1) {
  explorer::SearchOptions options = test_support::search_options(semantics, depth, threads);
  options.coverage = true;
  return explorer::search(options);
}

// Rows taken, counted independently: the total of the per-row counts is at least the number
// of transitions that took any row, and no row is counted in more transitions than were made.
TEST(SearchCoverage, CountsAreBoundedByTheTransitions) {
  const explorer::SearchResult r = search_with_coverage(spec::Semantics::Upstream, 3);
  ASSERT_EQ(r.row_transitions.size(), Machine::rows().rows().size());
  std::uint64_t total = 0;
  for (std::uint64_t n : r.row_transitions) {
    EXPECT_LE(n, r.transitions);
    total += n;
  }
  EXPECT_GT(total, 0u);
}

// A row absent under a semantics can never fire there.
TEST(SearchCoverage, AbsentRowsNeverFire) {
  for (spec::Semantics s : spec::kAllSemantics) {
    const explorer::SearchResult r = search_with_coverage(s, 3);
    const auto& rows = Machine::rows().rows();
    for (std::size_t i = 0; i < rows.size(); ++i) {
      if (!explorer::can_fire_under(rows[i], s)) {
        EXPECT_EQ(r.row_transitions[i], 0u) << spec::name(s) << " row " << i;
      }
    }
  }
}

// The counts are the search's, not the threads': the same at any thread count.
TEST(SearchCoverage, SameForAnyThreadCount) {
  const explorer::SearchResult one = search_with_coverage(spec::Semantics::Pr3213, 4, 1);
  const explorer::SearchResult three = search_with_coverage(spec::Semantics::Pr3213, 4, 3);
  EXPECT_EQ(one.row_transitions, three.row_transitions);
  EXPECT_EQ(explorer::coverage_text(spec::Semantics::Pr3213, one),
            explorer::coverage_text(spec::Semantics::Pr3213, three));
}

// A deeper search takes every row a shallower one takes, at least as often.
TEST(SearchCoverage, GrowsWithDepth) {
  const explorer::SearchResult shallow = search_with_coverage(spec::Semantics::Fp8sm, 2);
  const explorer::SearchResult deep = search_with_coverage(spec::Semantics::Fp8sm, 3);
  for (std::size_t i = 0; i < shallow.row_transitions.size(); ++i) {
    EXPECT_LE(shallow.row_transitions[i], deep.row_transitions[i]) << "row " << i;
  }
}

// Without --coverage nothing is counted or reported.
TEST(SearchCoverage, OffByDefault) {
  const explorer::SearchResult r = explorer::search(test_support::search_options(spec::Semantics::Fp8sm, 2));
  EXPECT_TRUE(r.row_transitions.empty());
  const explorer::Json document = explorer::search_json(test_support::search_options(spec::Semantics::Fp8sm, 2), r);
  EXPECT_FALSE(document.contains("coverage"));
}

}  // namespace
}  // namespace fp8sm
