// The search over several ranks (ThreadRanks: K ranks as threads of this process, with the
// partitioning, messages, merges and agreements of an MPI job) against the one-process search:
// the same report for any K, budgets stopping at the same state, counterexamples that replay
// although their paths cross ranks, and a failure on one rank agreed by all.
// tests/mpi/ runs the same comparisons through mpirun.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <string>

#include "explorer/report/search_report.hpp"
#include "explorer/search/ranks.hpp"
#include "explorer/search/search.hpp"
#include "explorer/search/thread_ranks.hpp"
#include "scenario_helpers.hpp"
#include "spread_fingerprints.hpp"

namespace fp8sm {
namespace {

using explorer::SearchOptions;
using explorer::SearchResult;
using spec::Semantics;

// Every rank's result: rank 0's, after checking that every rank returned the same report.
SearchResult search_on(int ranks, const SearchOptions& options) {
  std::mutex mutex;
  std::vector<std::string> reports(static_cast<std::size_t>(ranks));
  SearchResult first;
  explorer::ThreadRanks::run(ranks, [&](explorer::Ranks& r) {
    SearchResult result = explorer::search(options, r);
    std::lock_guard<std::mutex> lock(mutex);
    reports[static_cast<std::size_t>(r.rank())] = explorer::search_text(options, result);
    if (r.rank() == 0) first = std::move(result);
  });
  for (const std::string& report : reports) {
    EXPECT_EQ(report.substr(0, report.find("total:")), reports[0].substr(0, reports[0].find("total:")));
  }
  return first;
}

// The report without the lines a run measures (time, memory, ranks).
std::string report(const SearchOptions& options, const SearchResult& result) {
  const std::string text = explorer::search_text(options, result);
  return text.substr(0, text.find("total:"));
}

// The JSON document without the processes' own figures.
std::string document(const SearchOptions& options, const SearchResult& result) {
  explorer::Json json = explorer::search_json(options, result);
  for (const char* measured : {"seconds", "states_per_second", "peak_memory_bytes", "stored_bytes",
                               "stored_bytes_per_state", "ranks", "peak_memory_bytes_per_rank", "exchanged_bytes"}) {
    json.erase(measured);
  }
  return json.dump();
}

SearchOptions options(Semantics s, int depth) {
  SearchOptions o = test_support::search_options(s, depth);
  o.coverage = true;
  return o;
}

TEST(DistributedSearch, TheSameReportForAnyNumberOfRanks) {
  for (Semantics s : spec::kAllSemantics) {
    const SearchOptions o = options(s, 4);
    const SearchResult alone = explorer::search(o);
    for (int ranks : {1, 2, 3, 4}) {
      const SearchResult many = search_on(ranks, o);
      EXPECT_EQ(report(o, many), report(o, alone)) << spec::name(s) << ", " << ranks << " ranks";
      EXPECT_EQ(document(o, many), document(o, alone)) << spec::name(s) << ", " << ranks << " ranks";
      EXPECT_EQ(many.ranks, ranks);
      EXPECT_EQ(many.peak_memory_per_rank.size(), static_cast<std::size_t>(ranks));
      EXPECT_EQ(many.exchanged_bytes > 0, ranks > 1);
    }
  }
}

TEST(DistributedSearch, ThreadsWithinRanksChangeNothing) {
  SearchOptions o = options(Semantics::Upstream, 4);
  const std::string expected = report(o, explorer::search(o));
  o.threads = 3;
  EXPECT_EQ(report(o, search_on(2, o)), expected);
}

// A layer of a few thousand states takes several rounds of parents per rank (256 each): merging
// across rounds, with the rounds sent ahead of the merge, keeps every count.
TEST(DistributedSearch, ManyRoundsKeepEveryCount) {
  const SearchOptions o = test_support::search_options(Semantics::Pr3213, 4);
  const SearchResult alone = explorer::search(o);
  const SearchResult many = search_on(2, o);
  EXPECT_EQ(report(o, many), report(o, alone));
  // Layer 3, expanded into layer 4, holds more than four rounds of two ranks.
  EXPECT_GT(alone.layers[3].frontier, 4u * 2u * 256u);
}

TEST(DistributedSearch, CounterexamplesWhosePathsCrossRanksReplay) {
  for (Semantics s : {Semantics::Upstream, Semantics::Pr3213}) {
    const SearchResult result = search_on(3, test_support::search_options(s, 4));
    ASSERT_FALSE(result.counterexamples.empty());
    for (const auto& c : result.counterexamples) EXPECT_TRUE(test_support::replays(c, s));
  }
}

// A state budget stops the search at the state that reaches it, whichever rank stored it: the
// partial report is the one-process search's (its counts, verdicts and counterexamples).
TEST(DistributedSearch, AStateBudgetStopsAtTheSameStateForAnyNumberOfRanks) {
  for (std::uint64_t budget : {1u, 2u, 250u, 3000u, 47000u}) {
    SearchOptions o = options(Semantics::Upstream, 5);
    o.max_states = budget;
    const SearchResult alone = explorer::search(o);
    ASSERT_FALSE(alone.complete) << budget;
    for (int ranks : {2, 3}) {
      const SearchResult many = search_on(ranks, o);
      EXPECT_EQ(report(o, many), report(o, alone)) << budget << " states, " << ranks << " ranks";
      EXPECT_EQ(many.distinct, std::max<std::uint64_t>(budget, 2));
    }
  }
}

// With several ranks --max-memory is the job's budget, each rank getting its share: the search
// stops at the first state (in discovery order) that some rank could not store, names that rank,
// and what it reports up to there is sound.
TEST(DistributedSearch, AMemoryBudgetStopsAtARanksShareAndNamesTheRank) {
  SearchOptions o = test_support::search_options(Semantics::Upstream, 6);
  o.max_memory = 4u << 20;
  const SearchResult result = search_on(2, o);
  EXPECT_FALSE(result.complete);
  EXPECT_EQ(result.stop_reason, explorer::StopReason::MaxMemory);
  EXPECT_TRUE(result.memory_stop_rank == 0 || result.memory_stop_rank == 1);
  EXPECT_EQ(result.memory_share, o.max_memory / 2);
  EXPECT_LE(result.stored_bytes, o.max_memory);
  EXPECT_GT(result.distinct, 20000u);
  for (const auto& c : result.counterexamples) EXPECT_TRUE(test_support::replays(c, Semantics::Upstream));
  // The same budget and ranks stop at the same state every time.
  EXPECT_EQ(report(o, search_on(2, o)), report(o, result));
}

// Each rank's share holds its violation sets too, which a round fills only once the ranks agree
// where a budget cuts it: under upstream, whose states violate I1 from the second statement on,
// no budget of a range that stops two ranks in layers 1, 3 and 4 of a search to depth 4 lets
// them store more than the budget.
TEST(DistributedSearch, AMemoryBudgetHoldsTheViolationSetsToo) {
  test_support::expect_budgets_hold_the_violation_sets(384u << 10, 768u << 10,
                                                      [](const SearchOptions& o) { return search_on(2, o); });
}

// A rank that fails (here on purpose, as a program past the flat state's capacity would) is
// known to every rank at the same round: all of them throw the same RankFailure naming it.
TEST(DistributedSearch, AFailureOnOneRankIsEveryRanksNamingIt) {
  ::setenv("FP8SM_TEST_FAULT", "throw expansion 3 1", 1);
  std::mutex mutex;
  std::vector<std::string> errors;
  try {
    explorer::ThreadRanks::run(3, [&](explorer::Ranks& r) {
      try {
        explorer::search(test_support::search_options(Semantics::Fp8sm, 4), r);
      } catch (const explorer::RankFailure& e) {
        std::lock_guard<std::mutex> lock(mutex);
        errors.push_back(e.what());
      }
    });
  } catch (...) {
    ::unsetenv("FP8SM_TEST_FAULT");
    throw;
  }
  ::unsetenv("FP8SM_TEST_FAULT");
  ASSERT_EQ(errors.size(), 3u);
  for (const std::string& error : errors) {
    EXPECT_EQ(error, "rank 1 of 3: a fault on purpose (FP8SM_TEST_FAULT) at expansion of layer 3");
  }
}

// An interrupt is one process's (SIGINT to one rank of an MPI job; here the flag of one rank):
// every rank stops at the round where that rank saw it, with the same report. Set before the
// search, the search stops before layer 1; set once rank 0 completed layer 2, somewhere in
// layers 3 to 5 (the interrupted rank expands at most a few rounds ahead of what the others
// merge, and layer 5 has dozens of rounds), never at the end.
TEST(DistributedSearch, AnInterruptOnOneRankStopsEveryRankAtTheSameRound) {
  // The one-process search that each interrupted one is compared with, to the deepest layer an
  // interrupted search completes (4): searched once for the four cases.
  const SearchResult alone = explorer::search(options(Semantics::Upstream, 4));
  for (const bool from_the_start : {true, false}) {
    for (const int interrupted_rank : {0, 2}) {
      SCOPED_TRACE(testing::Message() << "rank " << interrupted_rank << (from_the_start ? ", from the start" : ""));
      const SearchOptions o = options(Semantics::Upstream, 5);
      std::atomic<bool> interrupt{from_the_start};
      const std::atomic<bool> no_interrupt{false};
      std::mutex mutex;
      std::vector<std::string> reports(3);
      std::vector<SearchResult> results(3);
      explorer::ThreadRanks::run(3, [&](explorer::Ranks& r) {
        SearchOptions mine = o;
        mine.interrupt = r.rank() == interrupted_rank ? &interrupt : &no_interrupt;
        SearchResult result = explorer::search(mine, r, [&](const explorer::LayerStats& layer, double) {
          if (layer.depth == 2) interrupt = true;  // rank 0 only
        });
        std::lock_guard<std::mutex> lock(mutex);
        reports[static_cast<std::size_t>(r.rank())] = report(o, result);
        results[static_cast<std::size_t>(r.rank())] = std::move(result);
      });
      for (const std::string& text : reports) EXPECT_EQ(text, reports[0]);
      const SearchResult& result = results[0];
      EXPECT_FALSE(result.complete);
      EXPECT_EQ(result.stop_reason, explorer::StopReason::Interrupted);
      if (from_the_start) {
        EXPECT_EQ(result.depth_completed, 0);
        EXPECT_EQ(result.distinct, 1u);
      } else {
        EXPECT_GE(result.depth_completed, 2);
        EXPECT_LT(result.depth_completed, 5);
      }
      // What it explored is what the one-process search explores, up to the last complete layer.
      ASSERT_LT(result.depth_completed, static_cast<int>(alone.layers.size()));
      for (int d = 0; d <= result.depth_completed; ++d) {
        EXPECT_EQ(result.layers[static_cast<std::size_t>(d)].distinct, alone.layers[static_cast<std::size_t>(d)].distinct);
      }
      for (const auto& c : result.counterexamples) EXPECT_TRUE(test_support::replays(c, Semantics::Upstream));
    }
  }
}

TEST(OwnerOf, SpreadsFingerprintsEvenlyOverTheRanks) {
  for (int ranks : {2, 3, 7}) {
    std::vector<int> counts(static_cast<std::size_t>(ranks), 0);
    for (int i = 0; i < 70000; ++i) {
      const std::uint64_t x = test_support::splitmix64(static_cast<std::uint64_t>(i));  // as XXH3's bits
      // the high word fixed: the owner comes from bits the seen-set neither places by nor keeps
      const int owner = explorer::owner_of(explorer::Fingerprint{0, x}, ranks);
      ASSERT_GE(owner, 0);
      ASSERT_LT(owner, ranks);
      ++counts[static_cast<std::size_t>(owner)];
    }
    for (int c : counts) EXPECT_NEAR(c, 70000 / ranks, 70000 / ranks / 20) << ranks << " ranks";
  }
}

}  // namespace
}  // namespace fp8sm
