// The exhaustive search against independent enumerations, across thread counts, and its
// counterexamples against `explorer run`'s path (run_scenario), which shares no search code.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <iterator>
#include <memory>
#include <set>
#include <sstream>
#include <string>

#include "explorer/model/alphabet.hpp"
#include "explorer/model/model_state.hpp"
#include "explorer/model/scenario_run.hpp"
#include "explorer/report/search_report.hpp"
#include "explorer/search/fingerprint_set.hpp"
#include "explorer/search/search.hpp"
#include "scenario_helpers.hpp"
#include "spec/format.hpp"
#include "spec/scenario_parser.hpp"

namespace fp8sm {
namespace {

using explorer::AlphabetOptions;
using explorer::ModelRunner;
using explorer::SearchOptions;
using spec::Semantics;
using spec::Statement;

// A search state with the runner that executes it; copies share the runner (a runner binds to
// the state it is given at each call) and copy the flat state.
class Probe {
 public:
  explicit Probe(Semantics s, const spec::InvariantSet& checks = {}, bool canonical_ids = true)
      : runner_(std::make_shared<ModelRunner>(s, checks, canonical_ids)),
        state_(std::make_unique<explorer::ModelState>()) {
    runner_->initial(*state_);
  }
  Probe(const Probe& other) : runner_(other.runner_), state_(std::make_unique<explorer::ModelState>(*other.state_)) {}
  Probe& operator=(const Probe& other) {
    runner_ = other.runner_;
    *state_ = *other.state_;
    return *this;
  }
  explorer::Verdict apply(const Statement& s) { return runner_->apply(*state_, s); }
  std::string encode() const { return runner_->canonical_bytes(*state_); }
  const explorer::ProgramFacts& facts() const { return state_->facts; }

 private:
  std::shared_ptr<ModelRunner> runner_;
  std::unique_ptr<explorer::ModelState> state_;
};

SearchOptions options(Semantics s, int depth, int threads = 1, bool symmetry = true) {
  SearchOptions o = test_support::search_options(s, depth, threads);
  o.alphabet.symmetry = symmetry;
  return o;
}

// Every state reachable with up to `depth` statements (closes free), by depth-first
// enumeration without any de-duplication, keyed by the exact encoding.
void enumerate(const Probe& state, int budget, const AlphabetOptions& alphabet, std::set<std::string>& states) {
  states.insert(state.encode());
  if (!state.facts().open.empty()) {
    Probe closed(state);
    closed.apply(explorer::close_statement());
    enumerate(closed, budget, alphabet, states);
  }
  if (budget == 0) return;
  std::vector<Statement> next;
  explorer::next_statements(state.facts(), alphabet, next);
  for (const Statement& s : next) {
    Probe child(state);
    child.apply(s);
    enumerate(child, budget - 1, alphabet, states);
  }
}

TEST(Search, DistinctStatesEqualAnEnumerationWithoutDeduplication) {
  for (Semantics s : spec::kAllSemantics) {
    for (int depth = 0; depth <= 3; ++depth) {
      std::set<std::string> states;
      enumerate(Probe(s), depth, AlphabetOptions{}, states);
      const auto result = explorer::search(options(s, depth));
      EXPECT_EQ(result.distinct, states.size()) << spec::name(s) << " depth " << depth;
      EXPECT_TRUE(result.complete);
    }
  }
}

// Every well-formed program of up to `depth` statements, run from scratch by run_scenario:
// the union of what they violate, and the length of the shortest violating program.
void violations_of_all_programs(Semantics s, std::vector<Statement>& program, int open, int budget,
                                std::map<spec::Invariant, int>& shortest) {
  if (open == 0) {
    const auto report = explorer::run_scenario(explorer::program_of(program, AlphabetOptions{}), s);
    int length = 0;
    for (const Statement& st : program) length += st.op != spec::Op::Close;
    for (const auto& step : report.steps) {
      for (spec::Invariant i : spec::kAllInvariants) {
        if (!step.violations.contains(i)) continue;
        auto it = shortest.find(i);
        if (it == shortest.end() || it->second > length) shortest[i] = length;
      }
    }
  }
  // Statements are generated the way the search generates them, from a state of the prefix.
  Probe state(s);
  for (const Statement& st : program) state.apply(st);
  if (open > 0) {
    program.push_back(explorer::close_statement());
    violations_of_all_programs(s, program, open - 1, budget, shortest);
    program.pop_back();
  }
  if (budget == 0) return;
  std::vector<Statement> next;
  explorer::next_statements(state.facts(), AlphabetOptions{}, next);
  for (const Statement& st : next) {
    program.push_back(st);
    violations_of_all_programs(s, program, open + (spec::opens_block(st.op) ? 1 : 0), budget - 1, shortest);
    program.pop_back();
  }
}

TEST(Search, VerdictsAndShortestLengthsEqualRunningEveryProgram) {
  for (Semantics s : spec::kAllSemantics) {
    std::map<spec::Invariant, int> shortest;
    std::vector<Statement> program;
    violations_of_all_programs(s, program, 0, 3, shortest);
    const auto result = explorer::search(options(s, 3));
    std::map<spec::Invariant, int> found;
    for (const auto& c : result.counterexamples) found[c.invariant] = c.length;
    EXPECT_EQ(found, shortest) << spec::name(s);
  }
}

TEST(Search, EveryCounterexampleReplaysToTheSameVerdict) {
  for (Semantics s : {Semantics::Upstream, Semantics::Pr3213}) {
    const auto result = explorer::search(options(s, 4));
    ASSERT_FALSE(result.counterexamples.empty());
    for (const auto& c : result.counterexamples) EXPECT_TRUE(test_support::replays(c, s));
  }
}

std::string without_totals(const SearchOptions& o, const explorer::SearchResult& r) {
  const std::string out = explorer::search_text(o, r);
  return out.substr(0, out.find("total:"));
}

TEST(Search, SameOutputWhateverTheThreadCount) {
  for (Semantics s : spec::kAllSemantics) {
    const SearchOptions one = options(s, 4, 1);
    const std::string expected = without_totals(one, explorer::search(one));
    for (int threads : {2, 3, 8}) {
      const SearchOptions many = options(s, 4, threads);
      EXPECT_EQ(without_totals(many, explorer::search(many)), expected) << threads << " threads";
    }
  }
}

// Renaming modules by first use keeps every verdict and every shortest length.
TEST(Search, SymmetryReductionKeepsVerdicts) {
  for (Semantics s : spec::kAllSemantics) {
    const auto reduced = explorer::search(options(s, 4, 2, true));
    const auto full = explorer::search(options(s, 4, 2, false));
    EXPECT_LT(reduced.distinct, full.distinct);
    ASSERT_EQ(reduced.counterexamples.size(), full.counterexamples.size());
    for (std::size_t i = 0; i < full.counterexamples.size(); ++i) {
      EXPECT_EQ(reduced.counterexamples[i].invariant, full.counterexamples[i].invariant);
      EXPECT_EQ(reduced.counterexamples[i].length, full.counterexamples[i].length);
    }
  }
}

TEST(Search, RawIdsAlsoEqualAnEnumerationWithoutDeduplication) {
  for (Semantics s : spec::kAllSemantics) {
    std::set<std::string> states;
    enumerate(Probe(s, {}, false), 3, AlphabetOptions{}, states);
    SearchOptions o = options(s, 3);
    o.canonical_ids = false;
    EXPECT_EQ(explorer::search(o).distinct, states.size()) << spec::name(s);
  }
}

// Canonical ids merge states whose futures are equal, so every verdict, its shortest length
// and whether a state violates must stay; only the number of states may fall.
TEST(Search, CanonicalIdsKeepEveryVerdict) {
  for (Semantics s : spec::kAllSemantics) {
    SearchOptions raw = options(s, 4, 2);
    raw.canonical_ids = false;
    const auto full = explorer::search(raw);
    const auto reduced = explorer::search(options(s, 4, 2));
    EXPECT_LT(reduced.distinct, full.distinct) << spec::name(s);
    ASSERT_EQ(reduced.counterexamples.size(), full.counterexamples.size()) << spec::name(s);
    for (std::size_t i = 0; i < full.counterexamples.size(); ++i) {
      EXPECT_EQ(reduced.counterexamples[i].invariant, full.counterexamples[i].invariant);
      EXPECT_EQ(reduced.counterexamples[i].length, full.counterexamples[i].length);
      EXPECT_EQ(spec::print_scenario(reduced.counterexamples[i].program),
                spec::print_scenario(full.counterexamples[i].program));
    }
  }
}

TEST(Search, CanonicalIdsMergeAnAbandonedCheckpointWithNone) {
  // A checkpoint abandoned by an exception before any module ran leaves behind only its ids
  // (a capture, a frame): with canonical ids the state after it and a later checkpointed step
  // is the state after that step alone.
  const auto run = [](const std::vector<Statement>& statements, bool canonical_ids) {
    Probe state(Semantics::Fp8sm, {}, canonical_ids);
    for (const Statement& s : statements) state.apply(s);
    return state.encode();
  };
  const auto make = [](spec::Op op) {
    Statement s;
    s.op = op;
    if (op == spec::Op::Backward) s.name = spec::kCurrentGraph;
    return s;
  };
  using spec::Op;
  const Statement close = explorer::close_statement();
  std::vector<Statement> step = {make(Op::AutocastOn), make(Op::CheckpointNonReentrant), make(Op::Linear), close,
                                 close, make(Op::Backward), make(Op::Step)};
  std::vector<Statement> abandoned_then_step = {make(Op::Try), make(Op::CheckpointNonReentrant),
                                                make(Op::RaiseAlways), close, close};
  abandoned_then_step.insert(abandoned_then_step.end(), step.begin(), step.end());
  EXPECT_NE(run(abandoned_then_step, false), run(step, false));
  EXPECT_EQ(run(abandoned_then_step, true), run(step, true));
}

std::string verdict_text(const explorer::Verdict& verdict) {
  std::string text;
  for (spec::Invariant i : spec::kAllInvariants) {
    if (verdict.contains(i)) fmt::format_to(std::back_inserter(text), "{}: {}\n", i, verdict.reason(i));
  }
  return text;
}

// The search recycles one parent and one child state per worker, copying into them only the
// parts it carries. A state copied that way must behave exactly as a full copy, whatever its
// other parts held before (here: garbage bytes): for every next statement of every program of
// up to 3 statements, the same verdict and the same canonical bytes.
void check_partial_copies(ModelRunner& runner, std::vector<Statement>& program, int budget) {
  auto source = std::make_unique<explorer::ModelState>();
  auto recycled = std::make_unique<explorer::ModelState>();
  auto copied = std::make_unique<explorer::ModelState>();
  runner.initial(*source);
  for (const Statement& st : program) runner.apply(*source, st);
  std::vector<Statement> next;
  explorer::next_statements(source->facts, AlphabetOptions{}, next);
  if (!source->facts.open.empty()) next.push_back(explorer::close_statement());
  for (const Statement& statement : next) {
    std::memset(static_cast<void*>(recycled.get()), 0xA5, sizeof(explorer::ModelState));
    runner.copy(*recycled, *source);
    *copied = *source;
    const std::string by_recycled = verdict_text(runner.apply(*recycled, statement));
    const std::string by_copied = verdict_text(runner.apply(*copied, statement));
    EXPECT_EQ(by_recycled, by_copied);
    ASSERT_EQ(runner.canonical_bytes(*recycled), runner.canonical_bytes(*copied));
    if (budget == 0 && statement.op != spec::Op::Close) continue;
    program.push_back(statement);
    check_partial_copies(runner, program, statement.op == spec::Op::Close ? budget : budget - 1);
    program.pop_back();
  }
}

TEST(Search, ACopyOfTheCarriedPartsIsAsGoodAsAFullCopy) {
  spec::InvariantSet only_i1;
  only_i1.add(spec::Invariant::I1);
  for (Semantics s : spec::kAllSemantics) {
    for (const spec::InvariantSet& checks : {spec::InvariantSet{}, only_i1}) {
      ModelRunner runner(s, checks, true);
      std::vector<Statement> program;
      check_partial_copies(runner, program, 2);
    }
  }
}

TEST(Search, StateBudgetStopsWithAPartialReport) {
  SearchOptions o = options(Semantics::Upstream, 6);
  o.max_states = 2000;
  const auto result = explorer::search(o);
  EXPECT_FALSE(result.complete);
  EXPECT_EQ(result.stop_reason, explorer::StopReason::MaxStates);
  EXPECT_EQ(result.distinct, 2000u);  // nothing is stored after the state that reaches the budget
}

// A budget stops the search at the same state whatever the thread count: merging is in index
// order and stops there, however far the workers have expanded ahead.
TEST(Search, StateBudgetStopsAtTheSameStateWhateverTheThreadCount) {
  SearchOptions one = options(Semantics::Upstream, 6, 1);
  one.max_states = 5000;
  const std::string expected = without_totals(one, explorer::search(one));
  for (int threads : {2, 3}) {
    SearchOptions many = options(Semantics::Upstream, 6, threads);
    many.max_states = 5000;
    EXPECT_EQ(without_totals(many, explorer::search(many)), expected) << threads << " threads";
  }
}

TEST(Search, MemoryBudgetBoundsTheStoredBytes) {
  SearchOptions o = options(Semantics::Upstream, 6);
  o.max_memory = 2u << 20;
  const auto result = explorer::search(o);
  EXPECT_FALSE(result.complete);
  EXPECT_EQ(result.stop_reason, explorer::StopReason::MaxMemory);
  EXPECT_LE(result.stored_bytes, o.max_memory);
  EXPECT_GT(result.distinct, 10000u);  // the budget was used, not refused at once
}

TEST(Search, StoresAtMostSixteenBytesPerState) {
  // 8-byte fingerprints at 75-90 % load and a 5-byte tree entry: the target.
  const auto result = explorer::search(options(Semantics::Fp8sm, 4));
  ASSERT_GT(result.distinct, 30000u);
  EXPECT_LE(static_cast<double>(result.stored_bytes) / static_cast<double>(result.distinct), 16.0);
}

// The budget holds the violation sets too, which grow as a search finds violating states
// (upstream violates I1 from the second statement on, and other invariants later): a search to
// depth 4 stopped by any of a range of budgets (in layers 1, 3 and 4, most of them in the last,
// where the sets grow) stores no more than its budget. One rank here, two in
// test_distributed_search.cpp.
TEST(Search, AMemoryBudgetHoldsTheViolationSetsToo) {
  test_support::expect_budgets_hold_the_violation_sets(
      192u << 10, 640u << 10, [](const SearchOptions& o) { return explorer::search(o); });
}

// Under a budget that the seen-set sized for the whole last layer and the layer's parents would
// exceed, a search to a depth sizes the last layer's table late, up to 95 % full
// (explorer/search/rank_memory.cpp), and completes within the budget with the same counts and
// verdicts; a budget a third smaller still stops it. Depth 5, with I1 checked alone (half the
// time of every invariant): at depth 4 the layer's parents leave the table too little room.
TEST(Search, AMemoryBudgetTheLastLayerWouldExceedIsMetByATableFilledLate) {
  SearchOptions unbounded = options(Semantics::Fp8sm, 5);
  unbounded.checks.add(spec::Invariant::I1);
  const auto whole = explorer::search(unbounded);
  ASSERT_TRUE(whole.complete);
  const explorer::FingerprintSet empty(16);
  SearchOptions bounded = unbounded;
  bounded.max_memory = empty.bytes_for(whole.distinct, 0.88);
  ASSERT_LT(bounded.max_memory, whole.stored_bytes) << "the budget is less than the search takes unbounded";
  const auto within = explorer::search(bounded);
  EXPECT_TRUE(within.complete);
  EXPECT_EQ(within.distinct, whole.distinct);
  EXPECT_EQ(within.transitions, whole.transitions);
  EXPECT_EQ(within.counterexamples.size(), whole.counterexamples.size());
  EXPECT_LE(within.stored_bytes, bounded.max_memory);
  EXPECT_LT(within.stored_bytes, empty.bytes_for(whole.distinct)) << "fuller than a table grown by fifths";

  bounded.max_memory = bounded.max_memory * 2 / 3;
  const auto stopped = explorer::search(bounded);
  EXPECT_FALSE(stopped.complete);
  EXPECT_EQ(stopped.stop_reason, explorer::StopReason::MaxMemory);
  EXPECT_LE(stopped.stored_bytes, bounded.max_memory);
}

TEST(Search, CheckSelectsInvariants) {
  SearchOptions o = options(Semantics::Upstream, 3);
  o.checks.add(spec::Invariant::I1);
  const auto result = explorer::search(o);
  ASSERT_EQ(result.counterexamples.size(), 1u);
  EXPECT_EQ(result.counterexamples[0].invariant, spec::Invariant::I1);
}

}  // namespace
}  // namespace fp8sm
