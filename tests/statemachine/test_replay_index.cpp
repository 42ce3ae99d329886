// The growable storage's indexed lists of a replay (statemachine/replay_index.hpp) against the
// plain scans they replace, on random sequences of every operation: each must answer exactly
// as one list of tagged entries read from the start would.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <optional>
#include <random>
#include <vector>

#include "statemachine/replay_index.hpp"

namespace fp8sm {
namespace {

using statemachine::IndexedReplayedRuns;
using statemachine::IndexedStash;
using statemachine::ReplayEntry;

struct StashedRun {
  std::uint32_t capture = 0;
  std::uint32_t module = 0;
  bool fp8 = false;
};
struct ReplayedRun {
  std::uint32_t frame = 0;
  std::uint32_t module = 0;
};

// The k-th run of `module` in `capture`'s stash, read from one list in order.
std::optional<ReplayEntry> scan_for(const std::vector<StashedRun>& runs, std::uint32_t capture, std::uint32_t module,
                                    std::size_t k) {
  unsigned fp8_rank = 0;
  for (const StashedRun& r : runs) {
    if (r.capture != capture || r.module != module) continue;
    if (k-- == 0) return ReplayEntry{r.fp8, fp8_rank};
    fp8_rank += r.fp8 ? 1u : 0u;
  }
  return std::nullopt;
}

TEST(IndexedStash, FindsWhatAScanOfTheRunsFinds) {
  for (std::uint32_t seed = 1; seed <= 20; ++seed) {
    std::mt19937 random(seed);
    IndexedStash<StashedRun> stash;
    std::vector<StashedRun> reference;  // every run, in the order added
    for (int op = 0; op < 600; ++op) {
      const auto capture = static_cast<std::uint32_t>(random() % 5);
      if (random() % 8 == 0) {  // a release
        stash.erase(capture);
        reference.erase(std::remove_if(reference.begin(), reference.end(),
                                       [&](const StashedRun& r) { return r.capture == capture; }),
                        reference.end());
      } else {
        const StashedRun run{capture, static_cast<std::uint32_t>(random() % 4), random() % 3 != 0};
        stash.add(run);
        reference.push_back(run);
      }
      ASSERT_EQ(stash.size(), reference.size());
      for (std::uint32_t c = 0; c < 5; ++c) {
        std::vector<StashedRun> expected;
        std::copy_if(reference.begin(), reference.end(), std::back_inserter(expected),
                     [&](const StashedRun& r) { return r.capture == c; });
        const auto [first, last] = stash.runs_of(c);
        ASSERT_EQ(static_cast<std::size_t>(last - first), expected.size()) << "seed " << seed;
        for (std::size_t i = 0; i < expected.size(); ++i) {
          ASSERT_EQ(first[static_cast<std::ptrdiff_t>(i)].module, expected[i].module);
          ASSERT_EQ(first[static_cast<std::ptrdiff_t>(i)].fp8, expected[i].fp8);
        }
        for (std::uint32_t m = 0; m < 5; ++m) {  // module 4 is never stashed
          for (std::size_t k = 0; k < 12; ++k) {
            const auto got = stash.run_of_module(c, m, k);
            const auto want = scan_for(reference, c, m, k);
            ASSERT_EQ(got.has_value(), want.has_value()) << "seed " << seed << " op " << op;
            if (!want) break;
            ASSERT_EQ(got->fp8, want->fp8);
            ASSERT_EQ(got->fp8_rank, want->fp8_rank);
          }
        }
      }
    }
  }
}

TEST(IndexedReplayedRuns, CountsWhatAScanCounts) {
  std::mt19937 random(3);
  IndexedReplayedRuns<ReplayedRun> replayed;
  std::vector<ReplayedRun> reference;
  for (int op = 0; op < 5000; ++op) {
    if (!reference.empty() && random() % 3 == 0) {
      replayed.pop_back();
      reference.pop_back();
    } else {
      const ReplayedRun run{static_cast<std::uint32_t>(random() % 4), static_cast<std::uint32_t>(random() % 3)};
      replayed.push_back(run);
      reference.push_back(run);
    }
    ASSERT_EQ(replayed.size(), reference.size());
    ASSERT_TRUE(std::equal(replayed.begin(), replayed.end(), reference.begin(), reference.end(),
                           [](const ReplayedRun& a, const ReplayedRun& b) {
                             return a.frame == b.frame && a.module == b.module;
                           }));
    for (std::uint32_t f = 0; f < 4; ++f) {
      for (std::uint32_t m = 0; m < 4; ++m) {
        const auto count = std::count_if(reference.begin(), reference.end(),
                                         [&](const ReplayedRun& r) { return r.frame == f && r.module == m; });
        ASSERT_EQ(replayed.count(f, m), static_cast<std::size_t>(count)) << "op " << op;
      }
    }
  }
}

}  // namespace
}  // namespace fp8sm
