// The exhaustive search against independent enumerations, across thread counts, and its
// counterexamples against `explorer run`'s path (run_scenario), which shares no search code.
#include <gtest/gtest.h>

#include <set>
#include <sstream>
#include <string>

#include "explorer/alphabet.hpp"
#include "explorer/model_state.hpp"
#include "explorer/scenario_run.hpp"
#include "explorer/search.hpp"
#include "explorer/search_report.hpp"
#include "scenario_helpers.hpp"
#include "spec/scenario_parser.hpp"

namespace fp8sm {
namespace {

using explorer::AlphabetOptions;
using explorer::ModelState;
using explorer::SearchOptions;
using spec::Semantics;
using spec::Statement;

SearchOptions options(Semantics s, int depth, int threads = 1, bool symmetry = true) {
  SearchOptions o = test_support::search_options(s, depth, threads);
  o.alphabet.symmetry = symmetry;
  return o;
}

// Every state reachable with up to `depth` statements (closes free), by depth-first
// enumeration without any de-duplication, keyed by the exact encoding.
void enumerate(const ModelState& state, int budget, const AlphabetOptions& alphabet, std::set<std::string>& states,
               bool canonical_ids = true) {
  states.insert(state.encode(canonical_ids));
  if (!state.open_blocks().empty()) {
    ModelState closed(state);
    closed.apply(explorer::close_statement());
    enumerate(closed, budget, alphabet, states, canonical_ids);
  }
  if (budget == 0) return;
  std::vector<Statement> next;
  explorer::next_statements(state, alphabet, next);
  for (const Statement& s : next) {
    ModelState child(state);
    child.apply(s);
    enumerate(child, budget - 1, alphabet, states, canonical_ids);
  }
}

TEST(Search, DistinctStatesEqualAnEnumerationWithoutDeduplication) {
  for (Semantics s : spec::kAllSemantics) {
    for (int depth = 0; depth <= 3; ++depth) {
      std::set<std::string> states;
      enumerate(ModelState(s), depth, AlphabetOptions{}, states);
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
  ModelState state(s);
  for (const Statement& st : program) state.apply(st);
  if (open > 0) {
    program.push_back(explorer::close_statement());
    violations_of_all_programs(s, program, open - 1, budget, shortest);
    program.pop_back();
  }
  if (budget == 0) return;
  std::vector<Statement> next;
  explorer::next_statements(state, AlphabetOptions{}, next);
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
  std::ostringstream text;
  explorer::print_search_text(text, o, r);
  std::string out = text.str();
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
    enumerate(ModelState(s), 3, AlphabetOptions{}, states, false);
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
  const auto run = [](const std::vector<Statement>& statements) {
    ModelState state(Semantics::Fp8sm);
    for (const Statement& s : statements) state.apply(s);
    return state;
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
  const ModelState a = run(abandoned_then_step);
  const ModelState b = run(step);
  EXPECT_NE(a.encode(false), b.encode(false));
  EXPECT_EQ(a.encode(true), b.encode(true));
}

// Every state reachable with up to `budget` statements (closes free), depth first, as copies.
void collect(const ModelState& state, int budget, std::vector<ModelState>& states) {
  states.push_back(state);
  if (!state.open_blocks().empty()) {
    ModelState closed(state);
    closed.apply(explorer::close_statement());
    collect(closed, budget, states);
  }
  if (budget == 0) return;
  std::vector<Statement> next;
  explorer::next_statements(state, AlphabetOptions{}, next);
  for (const Statement& s : next) {
    ModelState child(state);
    child.apply(s);
    collect(child, budget - 1, states);
  }
}

std::string verdict_text(const explorer::Verdict& verdict) {
  std::string text;
  for (const auto& [invariant, reason] : verdict.reasons) text += std::string(spec::id(invariant)) + ": " + reason + "\n";
  return text;
}

// The search recycles one state per worker, assigning each parent and successor into it. An
// assigned state must be exactly a copy of its source, whatever it held before (a deeper
// state's longer log and tapes, another step's results, or no reference run at all): the same
// raw encoding, and for every next statement the same verdict and the same raw encoding as a
// fresh copy given that statement.
TEST(Search, AnAssignedStateIsACopyWhateverItHeldBefore) {
  spec::InvariantSet only_i1;
  only_i1.add(spec::Invariant::I1);
  for (Semantics s : spec::kAllSemantics) {
    for (const spec::InvariantSet& checks : {spec::InvariantSet{}, only_i1}) {
      std::vector<ModelState> states;
      collect(ModelState(s, checks), 3, states);
      // The other carried set first: assigning must also create or drop the reference run.
      ModelState recycled(s, checks.empty() ? only_i1 : spec::InvariantSet{});
      std::vector<Statement> next;
      for (const ModelState& source : states) {
        recycled = source;
        ASSERT_EQ(recycled.encode(false), source.encode(false)) << spec::name(s);
        explorer::next_statements(source, AlphabetOptions{}, next);
        for (const Statement& statement : next) {
          recycled = source;
          ModelState copied(source);
          const explorer::Verdict by_assigned = recycled.apply(statement);
          const explorer::Verdict by_copied = copied.apply(statement);
          EXPECT_EQ(verdict_text(by_assigned), verdict_text(by_copied)) << spec::name(s);
          ASSERT_EQ(recycled.encode(false), copied.encode(false)) << spec::name(s);
        }
      }
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

TEST(Search, CheckSelectsInvariants) {
  SearchOptions o = options(Semantics::Upstream, 3);
  o.checks.add(spec::Invariant::I1);
  const auto result = explorer::search(o);
  ASSERT_EQ(result.counterexamples.size(), 1u);
  EXPECT_EQ(result.counterexamples[0].invariant, spec::Invariant::I1);
}

}  // namespace
}  // namespace fp8sm
