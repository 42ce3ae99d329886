// At depth 5 the search (`explorer --depth 5 --coverage`) fires every row present under fp8sm
// except those below, each for a reason this test checks: a row no scenario of the language
// can take (documented_unreachable.hpp, argued there), or a row that needs a longer program,
// which a named scenario of the catalogue or the regression corpus takes under fp8sm.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "coverage_helpers.hpp"
#include "documented_unreachable.hpp"
#include "explorer/report/row_guards.hpp"
#include "explorer/search/search.hpp"
#include "scenario_helpers.hpp"

namespace fp8sm {
namespace {

using statemachine::Machine;

// Row (as `explorer table` prints it) -> a scenario (catalogue name or corpus file) that takes
// it under fp8sm with more statements than depth 5 allows.
const std::map<std::string, std::string>& needs_a_longer_program() {
  static const std::map<std::string, std::string> rows = {
      {"OwnershipAvailable + SavedTensorUnpack [Not_<SlotReached>] -> (stays) / RaiseSlotNotRecomputed",
       "edge-slot-not-recomputed-with-ownership-available.scn"},
      {"InRecompute + ModulePrepare [And_<Fp8sm, And_<Not_<HasReplayEntry>, InFp8Autocast>>] -> (stays) / "
       "Seq<MarkModuleFp8, SaveLiveMetaForReplay>",
       "edge-recompute-takes-another-path.scn"},
      {"InOriginalForward + ModulePrepare [And_<Fp8sm, And_<And_<InReplay, Not_<HasReplayEntry>>, InFp8Autocast>>] "
       "-> (stays) / Seq<MarkModuleFp8, SaveLiveMetaForReplay, StashIntoCheckpoints>",
       "edge-recompute-takes-another-path.scn"},
  };
  return rows;
}

// Row -> why fp8sm never takes it, though upstream does (so it is not in
// documented_unreachable.hpp, which is about every semantics).
const std::map<std::string, std::string>& unreachable_under_fp8sm() {
  static const std::map<std::string, std::string> rows = {
      {"InOriginalForward + RecomputeEnter [Or_<Upstream, CaptureComplete>] -> InRecompute / PushCheckpointFrame",
       "fp8sm (like pr3213) enters a recompute only from a backward pass (recompute_uncaptured is refused), and the "
       "language allows backward only outside checkpoint blocks, so no recompute starts inside an original forward"},
      {"InRecompute + RecomputeEnter [Or_<Upstream, CaptureComplete>] -> (stays) / PushCheckpointFrame",
       "fp8sm (like pr3213) nests recomputes only through a reentrant sub-backward, which runs after the parent "
       "recompute has exited"},
  };
  return rows;
}

// How often each row is taken when `name` (catalogue_and_corpus()) runs under fp8sm.
std::vector<std::uint64_t> rows_taken_by(const std::string& name) {
  for (const test_support::NamedScenario& scenario : test_support::catalogue_and_corpus()) {
    if (scenario.name != name) continue;
    std::vector<std::uint64_t> counts;
    test_support::add_coverage(scenario.program, spec::Semantics::Fp8sm, counts);
    return counts;
  }
  throw std::runtime_error("no catalogue entry or corpus file " + name);
}

// The catalogue entries and corpus files that take row `row` under fp8sm, for a failure's
// message.
std::string scenarios_taking(std::size_t row) {
  std::string out;
  for (const test_support::NamedScenario& scenario : test_support::catalogue_and_corpus()) {
    std::vector<std::uint64_t> counts;
    test_support::add_coverage(scenario.program, spec::Semantics::Fp8sm, counts);
    if (counts[row] > 0) out += " " + scenario.name;
  }
  return out.empty() ? " none" : out;
}

TEST(SearchCoverageDepth5, FiresEveryFp8smRowOrExplainsIt) {
  const explorer::SearchResult r = [] {
    explorer::SearchOptions options = test_support::search_options(spec::Semantics::Fp8sm, 5);
    options.coverage = true;
    return explorer::search(options);
  }();
  const auto& rows = Machine::rows().rows();
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (!explorer::can_fire_under(rows[i], spec::Semantics::Fp8sm)) continue;
    const std::string row = rows[i].to_string();
    const bool unreachable = test_support::documented_unreachable().count(row) != 0 ||
                             unreachable_under_fp8sm().count(row) != 0;
    const auto longer = needs_a_longer_program().find(row);
    if (r.row_transitions[i] > 0) {
      EXPECT_FALSE(unreachable) << "row " << i << " is documented unreachable but fired: " << row;
      EXPECT_EQ(longer, needs_a_longer_program().end()) << "row " << i << " fires at depth 5 after all: " << row;
      continue;
    }
    if (unreachable) {
      // Nothing in the catalogue or the corpus takes it under fp8sm either.
      EXPECT_EQ(scenarios_taking(i), " none") << "row " << i << " is explained unreachable: " << row;
      continue;
    }
    if (longer == needs_a_longer_program().end()) {
      ADD_FAILURE() << "row " << i << " never fired at depth 5 and is not explained: " << row
                    << "; taken under fp8sm by:" << scenarios_taking(i);
      continue;
    }
    EXPECT_GT(rows_taken_by(longer->second)[i], 0u) << longer->second << " does not take row " << i << ": " << row;
  }
}

// Every explanation names a row of the table, present under fp8sm.
TEST(SearchCoverageDepth5, ExplanationsNameFp8smRows) {
  std::map<std::string, bool> present;
  for (const auto& row : Machine::rows().rows()) {
    present[row.to_string()] = explorer::can_fire_under(row, spec::Semantics::Fp8sm);
  }
  for (const auto& [row, scenario] : needs_a_longer_program()) EXPECT_TRUE(present[row]) << row;
  for (const auto& [row, reason] : unreachable_under_fp8sm()) EXPECT_TRUE(present[row]) << row;
}

}  // namespace
}  // namespace fp8sm
