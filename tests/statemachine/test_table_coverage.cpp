// Every row of the transition table is taken by the catalogue (spec §7) or the regression
// corpus (tests/scenarios/), under one semantics or the other, or is listed below with the
// reason it cannot be reached from the scenario language.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "coverage_helpers.hpp"
#include "documented_unreachable.hpp"
#include "scenario_helpers.hpp"

namespace fp8sm {
namespace {

std::vector<std::uint64_t> coverage_of_all_scenarios() {
  std::vector<std::uint64_t> counts;
  for (const test_support::NamedScenario& scenario : test_support::catalogue_and_corpus()) {
    test_support::add_coverage(scenario.program, counts);
  }
  return counts;
}

TEST(TableCoverage, EveryRowIsTakenOrDocumentedUnreachable) {
  const std::vector<std::uint64_t> counts = coverage_of_all_scenarios();
  const auto& rows = statemachine::Machine::rows().rows();
  ASSERT_EQ(counts.size(), rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const std::string row = rows[i].to_string();
    const bool documented = test_support::documented_unreachable().count(row) != 0;
    if (counts[i] == 0) {
      EXPECT_TRUE(documented) << "row " << i << " is never taken: " << row;
    } else {
      EXPECT_FALSE(documented) << "row " << i << " is documented unreachable but was taken " << counts[i]
                               << " times: " << row;
    }
  }
}

TEST(TableCoverage, DocumentedRowsExist) {
  std::map<std::string, bool> found;
  for (const auto& row : statemachine::Machine::rows().rows()) found[row.to_string()] = true;
  for (const auto& [row, reason] : test_support::documented_unreachable()) EXPECT_TRUE(found[row]) << row;
}

// Coverage is recorded per row: a scenario with no checkpoint never touches checkpoint rows.
TEST(TableCoverage, CountsOnlyTheRowsTaken) {
  std::vector<std::uint64_t> counts;
  test_support::add_coverage(test_support::catalogue_program("no-checkpoint"), counts);
  const auto& rows = statemachine::Machine::rows().rows();
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].event.find("Recompute") != std::string::npos ||
        rows[i].event.find("CheckpointForward") != std::string::npos) {
      EXPECT_EQ(counts[i], 0u) << rows[i].to_string();
    }
  }
}

}  // namespace
}  // namespace fp8sm
