// The search engine over a model of a few dozen lines (search_model.hpp's interface), against
// answers worked out by hand: the engine's hard parts (layers and their counts, the shortest
// counterexamples, closes, coverage, budgets, threads, ranks, snapshots) without the programs'
// model, whose numbers nobody can compute by hand.
//
// The toy: a walk on the integers. A state is x (from 0) and whether a block is open. From any
// state, `+1` (code 1) and `+2` (code 2) add to x; from a state with no block open, `open`
// (code 3) opens one, which the engine closes at once with the close (code 4), adding 10 to x.
// I1 is violated by a step that reaches x = 5; I2 by ending the program at x = 4.
//
// Two finite walks, for the search to the fixpoint: on a circle (x modulo some n), and on the
// line within a bound (a step past it is out of bounds: not taken).
#include <gtest/gtest.h>

#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "explorer/search/engine.hpp"
#include "explorer/search/frontier.hpp"
#include "explorer/search/layer_expansion.hpp"
#include "explorer/search/search.hpp"
#include "explorer/search/search_model.hpp"
#include "explorer/search/snapshot.hpp"
#include "explorer/search/thread_ranks.hpp"
#include "spec/format.hpp"
#include "spread_fingerprints.hpp"
#include "temporary_directory.hpp"

namespace {

using fp8sm::explorer::EngineOptions;
using fp8sm::explorer::kMaxFixpointDepth;
using fp8sm::explorer::ModelCursor;
using fp8sm::explorer::ModelStep;
using fp8sm::explorer::SearchModel;
using fp8sm::explorer::SearchPath;
using fp8sm::explorer::SearchResult;
using fp8sm::explorer::StatementCode;
using fp8sm::spec::Invariant;
using fp8sm::spec::InvariantSet;

constexpr StatementCode kPlusOne = 1, kPlusTwo = 2, kOpen = 3, kClose = 4;
enum Row : std::uint16_t { kPlusRow = 0, kOpenRow = 1, kCloseRow = 2 };

struct Walk {
  int x = 0;
  bool open = false;
};

InvariantSet only(Invariant i) {
  InvariantSet set;
  set.add(i);
  return set;
}

// Which walk: with blocks or not; on a circle of `circle` points (0: the line); steps past
// `bound` out of bounds (0: none).
struct WalkShape {
  bool blocks = false;
  int circle = 0;
  int bound = 0;
};

class WalkCursor : public ModelCursor {
 public:
  explicit WalkCursor(const WalkShape& shape) : blocks_(shape.blocks), circle_(shape.circle), bound_(shape.bound) {}

  ModelStep initial() override { return settled(Walk{}); }

  void stand_on(const SearchPath& path, std::vector<StatementCode>& next) override {
    parent_ = Walk{};
    for (int i = 0; i < path.size(); ++i) apply(parent_, path[i], nullptr);
    next = {kPlusOne, kPlusTwo};
    if (blocks_ && !parent_.open) next.push_back(kOpen);
  }

  ModelStep step(StatementCode code, bool on_child, std::vector<std::uint16_t>* rows) override {
    if (!on_child) child_ = parent_;
    const bool violated = apply(child_, code, rows);
    ModelStep step = settled(child_);
    if (violated) step.violations = only(Invariant::I1);
    step.out_of_bounds = bound_ != 0 && child_.x > bound_;
    return step;
  }

  std::string reason(const SearchPath& path, bool at_end, Invariant invariant) override {
    Walk walk;
    std::string codes;
    for (int i = 0; i < path.size(); ++i) {
      apply(walk, path[i], nullptr);
      codes += std::to_string(path[i]);
    }
    return std::string(at_end ? "ended" : "stepped") + " at " + std::to_string(walk.x) + " by " + codes + " (" +
           std::string(fp8sm::spec::id(invariant)) + ")";
  }

 private:
  // Returns whether the step violated I1.
  bool apply(Walk& walk, StatementCode code, std::vector<std::uint16_t>* rows) const {
    std::uint16_t row = kPlusRow;
    switch (code) {
      case kPlusOne: walk.x += 1; break;
      case kPlusTwo: walk.x += 2; break;
      case kOpen: walk.open = true, row = kOpenRow; break;
      case kClose: walk.open = false, walk.x += 10, row = kCloseRow; break;
      default: ADD_FAILURE() << "the engine ran code " << int(code);
    }
    if (circle_ != 0) walk.x %= circle_;
    if (rows != nullptr) rows->push_back(row);
    return code != kOpen && walk.x == 5;
  }

  static ModelStep settled(const Walk& walk) {
    ModelStep step;
    // splitmix64's finaliser: distinct states, distinct and well-spread fingerprints (both words:
    // the seen-set and the ranks read both).
    const std::uint64_t state = static_cast<std::uint64_t>(walk.x) * 2 + (walk.open ? 1 : 0);
    step.fingerprint = {fp8sm::test_support::splitmix64(state), fp8sm::test_support::splitmix64(state + (1ull << 40))};
    step.top_level = !walk.open;
    if (step.top_level && walk.x == 4) step.end_violations = only(Invariant::I2);
    return step;
  }

  bool blocks_;
  int circle_;
  int bound_;
  Walk parent_;
  Walk child_;
};

class WalkModel : public SearchModel {
 public:
  explicit WalkModel(bool blocks = false) : shape_{blocks, 0, 0} {}
  explicit WalkModel(const WalkShape& shape) : shape_(shape) {}
  std::unique_ptr<ModelCursor> cursor() const override { return std::make_unique<WalkCursor>(shape_); }
  StatementCode close_code() const override { return kClose; }
  InvariantSet checked() const override {
    InvariantSet set = only(Invariant::I1);
    set.add(Invariant::I2);
    return set;
  }
  std::vector<std::string> carried() const override { return {"x", "whether a block is open"}; }
  std::size_t table_rows() const override { return 3; }
  // `+1` and `+2` as `linear L0` and `linear L1` (the walk has no blocks here).
  fp8sm::spec::Program program(const SearchPath& path) const override {
    fp8sm::spec::Program program;
    program.module_names = {"L0", "L1"};
    for (int i = 0; i < path.size(); ++i) {
      program.statements.push_back(fp8sm::spec::make_statement(fp8sm::spec::Op::Linear, path[i] == kPlusOne ? 0 : 1));
    }
    return program;
  }
  std::uint64_t identity() const override {
    return (shape_.blocks ? 2 : 1) + 4 * static_cast<std::uint64_t>(shape_.circle) +
           4096 * static_cast<std::uint64_t>(shape_.bound);
  }
  std::string settings() const override {
    return std::string(shape_.blocks ? "walk=blocks" : "walk=line") + " circle=" + std::to_string(shape_.circle) +
           " bound=" + std::to_string(shape_.bound);
  }

 private:
  WalkShape shape_;
};

SearchResult in_one_process(const EngineOptions& options, const SearchModel& model) {
  fp8sm::explorer::SingleRank rank;
  return fp8sm::explorer::run_engine(options, model, rank);
}

EngineOptions to_depth(int depth) {
  EngineOptions options;
  options.depth = depth;
  return options;
}

std::vector<StatementCode> codes_of(const fp8sm::spec::Program& program) {
  std::vector<StatementCode> codes;
  for (const auto& s : program.statements) codes.push_back(s.name == 0 ? kPlusOne : kPlusTwo);
  return codes;
}

// Everything a result says that does not depend on the machine (times, memory).
std::string summary(const SearchResult& r) {
  std::string text = "distinct " + std::to_string(r.distinct) + " transitions " + std::to_string(r.transitions) +
                     " complete " + std::to_string(r.complete) + " depth " + std::to_string(r.depth_completed) + "\n";
  for (const auto& layer : r.layers) {
    text += "layer " + std::to_string(layer.depth) + ": " + std::to_string(layer.frontier) + " " +
            std::to_string(layer.distinct) + " " + std::to_string(layer.transitions) + "\n";
  }
  for (const auto& c : r.counterexamples) {
    text += std::string(fp8sm::spec::id(c.invariant)) + " " + std::to_string(c.length) + " " + c.reason + "\n";
  }
  for (const auto& [invariant, states] : r.violating_states) {
    text += std::string(fp8sm::spec::id(invariant)) + " states " + std::to_string(states) + "\n";
  }
  for (std::uint64_t n : r.row_transitions) text += "row " + std::to_string(n) + "\n";
  return text;
}

// The search of `options` on two threads, and on 2 and 3 ranks of two threads, summarises as
// `alone` does.
void expect_the_same_on_threads_and_ranks(EngineOptions options, const SearchModel& model, const std::string& alone) {
  options.threads = 2;
  EXPECT_EQ(summary(in_one_process(options, model)), alone);
  for (int ranks : {2, 3}) {
    std::mutex mutex;
    std::vector<std::string> results;
    fp8sm::explorer::ThreadRanks::run(ranks, [&](fp8sm::explorer::Ranks& these) {
      const std::string result = summary(fp8sm::explorer::run_engine(options, model, these));
      std::lock_guard<std::mutex> lock(mutex);
      results.push_back(result);
    });
    ASSERT_EQ(results.size(), static_cast<std::size_t>(ranks));
    for (const std::string& result : results) EXPECT_EQ(result, alone) << ranks << " ranks";
  }
}

// Without blocks, layer d ≥ 1 holds the new states 2d - 1 and 2d; layer 1 is reached by 2
// transitions, every later one by 4 (two parents, two statements).
TEST(EngineOnAToyModel, CountsEachLayerAsWorkedOutByHand) {
  const SearchResult r = in_one_process(to_depth(4), WalkModel());
  ASSERT_EQ(r.layers.size(), 5u);
  EXPECT_EQ(r.layers[0].distinct, 1u);
  for (int d = 1; d <= 4; ++d) {
    EXPECT_EQ(r.layers[d].frontier, 2u) << d;
    EXPECT_EQ(r.layers[d].distinct, 1u + 2u * d) << d;
    EXPECT_EQ(r.layers[d].transitions, d == 1 ? 2u : 4u) << d;
  }
  EXPECT_EQ(r.distinct, 9u);
  EXPECT_EQ(r.transitions, 2u + 4u * 3);
  EXPECT_TRUE(r.complete);
  EXPECT_EQ(r.depth_completed, 4);
  EXPECT_EQ(r.carried, (std::vector<std::string>{"x", "whether a block is open"}));
}

// x = 5 is first reached in layer 3; the first parent of that layer in key order is 3 (reached
// by 1 then 2), whose `+2` reaches 5: the shortest counterexample the engine keeps is 1 2 2.
// Ending at 4 is first possible in layer 2, at 4 = 2 + 2. Each is one violating state.
TEST(EngineOnAToyModel, KeepsTheFirstShortestCounterexampleOfEachInvariant) {
  const SearchResult r = in_one_process(to_depth(4), WalkModel());
  ASSERT_EQ(r.counterexamples.size(), 2u);
  EXPECT_EQ(r.counterexamples[0].invariant, Invariant::I1);
  EXPECT_EQ(r.counterexamples[0].length, 3);
  EXPECT_EQ(codes_of(r.counterexamples[0].program), (std::vector<StatementCode>{kPlusOne, kPlusTwo, kPlusTwo}));
  EXPECT_EQ(r.counterexamples[0].reason, "stepped at 5 by 122 (I1)");
  EXPECT_EQ(r.counterexamples[1].invariant, Invariant::I2);
  EXPECT_EQ(r.counterexamples[1].length, 2);
  EXPECT_EQ(codes_of(r.counterexamples[1].program), (std::vector<StatementCode>{kPlusTwo, kPlusTwo}));
  EXPECT_EQ(r.counterexamples[1].reason, "ended at 4 by 22 (I2)");
  EXPECT_EQ(r.violating_states.at(Invariant::I1), 1u);
  EXPECT_EQ(r.violating_states.at(Invariant::I2), 1u);
}

// With blocks, to depth 2. Layer 1: +1, +2, and open's chain (0 open, then 10): 4 new states
// by 4 transitions. Layer 2, parents in key order: 1 gives 3 new (3; 1 open, then 11) by 4;
// 2 gives 3 new (4; 2 open, 12) by 4; "0 open" reaches 1 open and 2 open, both seen, whose
// closes are not run again: 0 new by 2; 10 gives 2 new (10 open, 20) by 4. So 8 new states by
// 14 transitions. The rows: `+` 2 + 8, open 1 + 3, close 1 + 3 (a chain whose first state was
// seen is not counted further).
TEST(EngineOnAToyModel, ClosesBelongToTheLayerOfTheirStatement) {
  EngineOptions options = to_depth(2);
  options.coverage = true;
  const SearchResult r = in_one_process(options, WalkModel(true));
  ASSERT_EQ(r.layers.size(), 3u);
  EXPECT_EQ(r.layers[1].frontier, 4u);
  EXPECT_EQ(r.layers[1].transitions, 4u);
  EXPECT_EQ(r.layers[2].frontier, 8u);
  EXPECT_EQ(r.layers[2].transitions, 14u);
  EXPECT_EQ(r.distinct, 13u);
  EXPECT_EQ(r.row_transitions, (std::vector<std::uint64_t>{10, 4, 4}));
  ASSERT_EQ(r.row_witnesses.size(), 3u);
  EXPECT_EQ(r.row_witnesses[kPlusRow].length, 1);
  EXPECT_EQ(r.row_witnesses[kOpenRow].length, 1);
  EXPECT_EQ(r.row_witnesses[kCloseRow].length, 1);  // closes are free
}

// States are stored in key order: 0; 1, 2; 3, ... The fourth is 3, the first of layer 2, where
// the search stops with layer 1 complete.
TEST(EngineOnAToyModel, StopsAtTheStateThatReachesMaxStates) {
  EngineOptions options = to_depth(4);
  options.max_states = 4;
  const SearchResult r = in_one_process(options, WalkModel());
  EXPECT_FALSE(r.complete);
  EXPECT_EQ(r.stop_reason, fp8sm::explorer::StopReason::MaxStates);
  EXPECT_EQ(r.distinct, 4u);
  EXPECT_EQ(r.depth_completed, 1);
}

// Threads and ranks change how the work is split, never the result.
TEST(EngineOnAToyModel, ThreadsAndRanksGiveTheSameResult) {
  EngineOptions options = to_depth(5);
  options.coverage = true;
  const WalkModel model(true);
  expect_the_same_on_threads_and_ranks(options, model, summary(in_one_process(options, model)));
}

// A search that writes snapshots ends as one that does not; resumed from its last snapshot, it
// ends the same again; a snapshot of another model is refused.
TEST(EngineOnAToyModel, ResumesFromItsSnapshot) {
  const fp8sm::test_support::TemporaryDirectory temporary;
  EngineOptions options = to_depth(4);
  const WalkModel model;
  fp8sm::explorer::SingleRank alone;
  const std::string expected = summary(fp8sm::explorer::run_engine(options, model, alone));
  options.snapshot_dir = temporary.file("snapshot");
  EXPECT_EQ(summary(fp8sm::explorer::run_engine(options, model, alone)), expected);
  options.resume = true;
  const SearchResult resumed = fp8sm::explorer::run_engine(options, model, alone);
  EXPECT_EQ(resumed.resumed_from_layer, 3);
  EXPECT_EQ(summary(resumed), expected);
  EXPECT_THROW(fp8sm::explorer::run_engine(options, WalkModel(true), alone), fp8sm::explorer::SnapshotError);
}

// A search to the fixpoint on the circle of 7 points: layer 1 adds 1 and 2, layer 2 adds 3 and
// 4, layer 3 adds 5 and 6, and layer 4 reaches only 6 + 1 = 0, 5 + 2 = 0, 6 + 2 = 1 and 5 + 1
// = 6, all seen: the fixpoint, at depth 3 (the farthest point is 3 statements away), with 7
// states. Every layer but the first is reached by 4 transitions.
TEST(EngineOnAToyModel, StopsAtTheFirstLayerThatAddsNoState) {
  EngineOptions options = to_depth(10);
  options.until_fixpoint = true;
  const SearchResult r = in_one_process(options, WalkModel(WalkShape{false, 7, 0}));
  EXPECT_TRUE(r.fixpoint);
  EXPECT_TRUE(r.complete);
  EXPECT_EQ(r.stop_reason, fp8sm::explorer::StopReason::None);
  ASSERT_EQ(r.layers.size(), 5u);
  EXPECT_EQ(r.layers[4].frontier, 0u);
  EXPECT_EQ(r.depth_completed, 4);  // the layer that added nothing; the fixpoint's depth is 3
  EXPECT_EQ(r.distinct, 7u);
  EXPECT_EQ(r.transitions, 2u + 4u * 3);
}

// The same search without a fixpoint by its last layer (the line is infinite) stops as
// incomplete, by NoFixpoint; a depth-bounded search never claims a fixpoint, even where there
// is one.
TEST(EngineOnAToyModel, SaysWhenThereIsNoFixpointByTheLastLayer) {
  EngineOptions options = to_depth(6);
  options.until_fixpoint = true;
  const SearchResult line = in_one_process(options, WalkModel());
  EXPECT_FALSE(line.fixpoint);
  EXPECT_FALSE(line.complete);
  EXPECT_EQ(line.stop_reason, fp8sm::explorer::StopReason::NoFixpoint);
  EXPECT_EQ(line.depth_completed, 6);
  EXPECT_EQ(line.distinct, 13u);
  const SearchResult bounded = in_one_process(to_depth(6), WalkModel(WalkShape{false, 7, 0}));
  EXPECT_FALSE(bounded.fixpoint);
  EXPECT_TRUE(bounded.complete);
}

// Steps out of bounds are not taken. On the line within x <= 4: layer 1 adds 1 and 2 (2
// transitions), layer 2 adds 3 and 4 (1 + 1 = 2 seen; 4 transitions), layer 3 reaches only
// 3 + 1 = 4, seen (1 transition): 3 + 2, 4 + 1 and 4 + 2 are past the bound. So the fixpoint is
// at depth 2, with 5 states and 7 transitions. x = 5 is never reached, so I1 holds; ending at
// 4 = 2 + 2 still violates I2.
TEST(EngineOnAToyModel, TakesNoStepOutOfBounds) {
  EngineOptions options = to_depth(10);
  options.until_fixpoint = true;
  const SearchResult r = in_one_process(options, WalkModel(WalkShape{false, 0, 4}));
  EXPECT_TRUE(r.fixpoint);
  EXPECT_EQ(r.depth_completed, 3);
  EXPECT_EQ(r.distinct, 5u);
  EXPECT_EQ(r.transitions, 7u);
  EXPECT_EQ(r.violating_states.count(Invariant::I1), 0u);
  ASSERT_EQ(r.counterexamples.size(), 1u);
  EXPECT_EQ(r.counterexamples[0].invariant, Invariant::I2);
  EXPECT_EQ(codes_of(r.counterexamples[0].program), (std::vector<StatementCode>{kPlusTwo, kPlusTwo}));
}

// Past the 8 layers a discovery key holds and the 16 codes a frontier slot holds inline: on a
// circle of 90 points, layer d adds 2d - 1 and 2d, and layer 45 only 89 (90 is 0): the
// fixpoint at depth 45, with 90 states, the same on threads and on ranks, whose keys are
// renumbered after every layer; its last paths hold 45 codes, near the 48 layers a search to
// the fixpoint may go. I1 (x = 5) is first reached by 1 2 2, I2 by ending at 2 + 2.
TEST(EngineOnAToyModel, ReachesAFixpointDeeperThanAKeyOrASlotHolds) {
  EngineOptions options = to_depth(kMaxFixpointDepth);
  options.until_fixpoint = true;
  const WalkModel model(WalkShape{false, 90, 0});
  const SearchResult r = in_one_process(options, model);
  EXPECT_TRUE(r.fixpoint);
  EXPECT_EQ(r.depth_completed, 46);
  EXPECT_EQ(r.distinct, 90u);
  for (int d = 1; d < 45; ++d) EXPECT_EQ(r.layers[d].frontier, 2u) << d;
  EXPECT_EQ(r.layers[45].frontier, 1u);
  ASSERT_EQ(r.counterexamples.size(), 2u);
  EXPECT_EQ(codes_of(r.counterexamples[0].program), (std::vector<StatementCode>{kPlusOne, kPlusTwo, kPlusTwo}));
  expect_the_same_on_threads_and_ranks(options, model, summary(r));
}

// The look-ahead (layer_expansion.hpp) only prefetches, so no result shows whether it runs:
// here it is watched. Each parent x = 0 .. 39 of a frontier has the successors x + 1 and x + 2;
// before the consumer takes a parent it must be shown the chains of the next one, whenever a
// worker has made them (on one thread, all but the parents that start a worker's run of 16,
// which are not expanded yet), and those chains must be the ones consumed next.
TEST(EngineOnAToyModel, TheConsumerIsShownTheNextParentsChainsBeforeItsOwn) {
  constexpr std::size_t kParents = 40;
  const WalkModel model;
  fp8sm::explorer::Frontier frontier;
  for (std::size_t x = 0; x < kParents; ++x) {
    fp8sm::explorer::FrontierEntry entry;
    entry.key = x;
    for (std::size_t i = 0; i < x; ++i) entry.path.push(kPlusOne);
    frontier.push_back(entry);
  }
  for (int threads : {1, 2}) {
    EngineOptions options;
    options.threads = threads;
    fp8sm::explorer::LayerExpansion expansion(options, model);
    std::vector<std::size_t> consumed;
    std::vector<fp8sm::explorer::Fingerprint> consumed_first;  // each parent's first successor
    std::vector<std::pair<std::size_t, fp8sm::explorer::Fingerprint>> shown;  // (before which consume, first successor)
    expansion.expand(
        frontier, 0, kParents,
        [&](std::size_t index, const fp8sm::explorer::Links& links) {
          consumed.push_back(index);
          consumed_first.push_back(links.links.at(0).fingerprint);
          return true;
        },
        [&](const fp8sm::explorer::Links& links) { shown.emplace_back(consumed.size(), links.links.at(0).fingerprint); });
    ASSERT_EQ(consumed.size(), kParents) << threads << " threads";
    for (std::size_t i = 0; i < kParents; ++i) EXPECT_EQ(consumed[i], i);
    for (const auto& [before, first] : shown) {
      ASSERT_LT(before + 1, kParents);
      EXPECT_EQ(first, consumed_first[before + 1]) << "shown before parent " << before << ", " << threads << " threads";
    }
    if (threads == 1) {
      EXPECT_EQ(shown.size(), kParents - 1 - (kParents - 1) / 16) << "every parent but a run's first";
    }
    EXPECT_GE(shown.size(), kParents / 2) << threads << " threads";
  }
}

}  // namespace
