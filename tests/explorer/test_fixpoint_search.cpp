// The search to the fixpoint on the programs' model (explorer --until-fixpoint): its states
// against a plain breadth-first search written here (no keys, no frontier slots, no ranks), its
// first layers against a depth-bounded search with the same bounds, and the log forgetting that
// lets programs of any length fit the flat state.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <unordered_set>
#include <vector>

#include "explorer/model/alphabet.hpp"
#include "explorer/model/model_state.hpp"
#include "explorer/model/resource_bounds.hpp"
#include "explorer/model/state_growth.hpp"
#include "explorer/search/search.hpp"
#include "explorer/search/thread_ranks.hpp"
#include "interpreter/interpreter.hpp"
#include "spec/random_program.hpp"
#include "spec/scenario_parser.hpp"

namespace fp8sm::explorer {
namespace {

using spec::Invariant;
using spec::Semantics;
using spec::Statement;

spec::InvariantSet only(Invariant i) {
  spec::InvariantSet set;
  set.add(i);
  return set;
}

SearchOptions bounded(Semantics semantics, int open_blocks, int live_nodes) {
  SearchOptions options;
  options.semantics = semantics;
  options.checks = only(Invariant::I1);
  options.alphabet.modules = 1;
  options.alphabet.bounds.open_blocks = open_blocks;
  options.alphabet.bounds.live_nodes = live_nodes;
  options.abstractions = Abstractions::sound();  // as explorer --until-fixpoint
  return options;
}

struct PlainSearch {
  std::size_t states = 0;
  int deepest = 0;  // the last layer that added a state
  std::vector<std::vector<std::string>> parts;  // with `keep_parts`: each state's canonical parts
};

// Every state within the bounds, breadth first, by the rule the engine follows: a statement,
// then closing braces until no block is open, each a state; a chain that leaves the bounds
// anywhere is not taken.
PlainSearch plain_search(const SearchOptions& options, bool keep_parts = false) {
  ModelRunner runner(options.semantics, options.checks, options.canonical_ids, options.abstractions);
  auto root = std::make_unique<ModelState>();
  auto parent = std::make_unique<ModelState>();
  auto child = std::make_unique<ModelState>();
  runner.initial(*root);
  std::unordered_set<Fingerprint, FingerprintHash> seen = {runner.fingerprint(*root)};
  std::vector<std::vector<Statement>> layer = {{}};
  std::vector<Statement> next;
  PlainSearch result;
  if (keep_parts) result.parts.push_back(runner.canonical_parts(*root).parts);
  for (int depth = 1; !layer.empty(); ++depth) {
    std::vector<std::vector<Statement>> added;
    for (const std::vector<Statement>& path : layer) {
      runner.copy(*parent, *root);
      for (const Statement& s : path) runner.apply(*parent, s);
      next_statements(parent->facts, options.alphabet, next);
      for (const Statement& first : next) {
        runner.copy(*child, *parent);
        std::vector<std::pair<std::vector<Statement>, Fingerprint>> chain;
        std::vector<std::vector<std::string>> chain_parts;
        std::vector<Statement> at = path;
        bool within = true;
        for (Statement via = first;; via = close_statement()) {
          runner.apply(*child, via);
          if (!within_bounds(*child, options.alphabet.bounds)) {
            within = false;
            break;
          }
          at.push_back(via);
          chain.emplace_back(at, runner.fingerprint(*child));
          if (keep_parts) chain_parts.push_back(runner.canonical_parts(*child).parts);
          if (child->facts.open.empty()) break;
        }
        if (!within) continue;
        for (std::size_t k = 0; k < chain.size(); ++k) {
          if (!seen.insert(chain[k].second).second) continue;
          added.push_back(std::move(chain[k].first));
          if (keep_parts) result.parts.push_back(std::move(chain_parts[k]));
        }
      }
    }
    if (!added.empty()) result.deepest = depth;
    layer = std::move(added);
  }
  result.states = seen.size();
  return result;
}

// The engine's fixpoint is the plain search's: the same states, the same deepest layer.
TEST(FixpointSearch, ReachesTheStatesAPlainBreadthFirstSearchReaches) {
  for (Semantics semantics : {Semantics::Fp8sm, Semantics::Pr3213}) {
    SearchOptions options = bounded(semantics, 1, 1);
    const PlainSearch plain = plain_search(options);
    options.until_fixpoint = true;
    options.depth = kMaxFixpointDepth;
    const SearchResult result = search(options);
    EXPECT_TRUE(result.fixpoint) << spec::name(semantics);
    EXPECT_TRUE(result.complete);
    EXPECT_EQ(result.distinct, plain.states) << spec::name(semantics);
    EXPECT_EQ(result.depth_completed - 1, plain.deepest) << spec::name(semantics);
    EXPECT_GT(plain.deepest, kMaxKeyLayers) << "the fixpoint lies past the layers a key holds";
  }
}

// The growth analysis (model/state_growth.hpp) walks the programs as the engine does: after each
// layer it has stored the states the search has, where the search reaches its fixpoint it does
// too, and there nothing still grows. Where upstream has none (its recompute contexts and its
// FIFO of captured bits outlive the step, docs/explorer.md "Fixpoint"), the search's report names
// what the analysis found growing, the machine's checkpoint frames among them, each part with a
// program that gave it a new value.
TEST(FixpointSearch, TheGrowthAnalysisTakesTheSearchsLayersAndNamesWhatGrows) {
  for (Semantics semantics : {Semantics::Fp8sm, Semantics::Pr3213}) {
    SearchOptions options = bounded(semantics, 1, 1);
    options.until_fixpoint = true;
    options.depth = kMaxFixpointDepth;
    const SearchResult result = search(options);
    ASSERT_TRUE(result.fixpoint) << spec::name(semantics);
    EXPECT_FALSE(result.still_growing.has_value());
    StateGrowthOptions growth_options;
    growth_options.depth = kMaxFixpointDepth;
    const StateGrowth growth = measure_state_growth(options, growth_options);
    EXPECT_TRUE(growth.fixpoint) << spec::name(semantics);
    EXPECT_TRUE(growth.still_growing().empty());
    ASSERT_EQ(growth.states.size() + 1, result.layers.size()) << spec::name(semantics);  // the search's has depth 0
    for (std::size_t d = 1; d < result.layers.size(); ++d) EXPECT_EQ(growth.states[d - 1], result.layers[d].distinct) << d;
  }
  SearchOptions options = bounded(Semantics::Upstream, 1, 1);
  options.until_fixpoint = true;
  options.depth = 6;
  const SearchResult result = search(options);
  ASSERT_EQ(result.stop_reason, StopReason::NoFixpoint);
  ASSERT_TRUE(result.still_growing.has_value());
  const SearchResult::StillGrowing& growing = *result.still_growing;
  EXPECT_EQ(growing.depth, 6);
  EXPECT_EQ(growing.states, result.distinct);  // within the analysis' budget: the same programs, the same states
  ASSERT_EQ(growing.examples.size(), growing.parts.size());
  EXPECT_NE(std::find(growing.parts.begin(), growing.parts.end(), "program.machine.checkpoint_frames"), growing.parts.end());
  for (std::size_t i = 0; i < growing.parts.size(); ++i) {
    EXPECT_NO_THROW(spec::parse_scenario(growing.examples[i])) << growing.parts[i] << ": " << growing.examples[i];
  }
  StateGrowthOptions growth_options;
  growth_options.depth = 6;
  EXPECT_EQ(measure_state_growth(options, growth_options).still_growing(), growing.parts);

  // Several ranks: rank 0, which reports, has the same analysis; the others do not repeat it.
  std::vector<SearchResult> by_rank(2);
  ThreadRanks::run(2, [&](Ranks& ranks) { by_rank[static_cast<std::size_t>(ranks.rank())] = search(options, ranks); });
  ASSERT_TRUE(by_rank[0].still_growing.has_value());
  EXPECT_EQ(by_rank[0].still_growing->parts, growing.parts);
  EXPECT_EQ(by_rank[0].still_growing->examples, growing.examples);
  EXPECT_FALSE(by_rank[1].still_growing.has_value());
}

// The growth analysis' count of the states that stay apart once a part is left out
// (StateGrowthOptions::forgetting, bench/state_growth --forgetting), against the plain search's
// states compared part by part here: for every part, the same number at the fixpoint. Within
// (1, 1, 1) with I3 checked, fp8sm's states differ in many parts, and leaving out the graph
// merges some while leaving out a part that every state holds alike (the semantics) merges none.
TEST(FixpointSearch, TheGrowthAnalysisCountsWhatForgettingAPartWouldMerge) {
  SearchOptions options = bounded(Semantics::Fp8sm, 1, 1);
  options.checks.add(Invariant::I3);
  const PlainSearch plain = plain_search(options, true);
  StateGrowthOptions growth_options;
  growth_options.depth = kMaxFixpointDepth;
  growth_options.forgetting = true;
  const StateGrowth growth = measure_state_growth(options, growth_options);
  ASSERT_TRUE(growth.fixpoint);
  ASSERT_EQ(growth.states.back(), plain.states);
  ModelRunner runner(options.semantics, options.checks, options.canonical_ids, options.abstractions);
  auto root = std::make_unique<ModelState>();
  runner.initial(*root);
  const std::vector<std::string> names = runner.part_names(*root);
  ASSERT_EQ(growth.distinct_without.size(), names.size());
  std::size_t merging = 0;
  for (std::size_t p = 0; p < names.size(); ++p) {
    std::set<std::vector<std::string>> without;
    for (std::vector<std::string> parts : plain.parts) {
      parts.erase(parts.begin() + static_cast<std::ptrdiff_t>(p));
      without.insert(std::move(parts));
    }
    const std::vector<std::size_t>& counted = growth.distinct_without.at(names[p]);
    ASSERT_EQ(counted.size(), growth.states.size()) << names[p];
    EXPECT_EQ(counted.back(), without.size()) << names[p];
    for (std::size_t d = 0; d < counted.size(); ++d) {
      EXPECT_LE(counted[d], growth.states[d]) << names[p] << " depth " << d + 1;
      // Each state left is one of at most as many states as the part has values.
      EXPECT_LE(growth.states[d], counted[d] * growth.part_values.at(names[p])[d]) << names[p] << " depth " << d + 1;
    }
    if (without.size() < plain.states) ++merging;
  }
  EXPECT_LT(growth.distinct_without.at("program.driver.step_graph").back(), plain.states);
  EXPECT_EQ(growth.distinct_without.at("program.machine.semantics").back(), plain.states);
  EXPECT_GT(merging, 3u);
}

// Several parts left out at once (StateGrowthOptions::forget_together, bench/state_growth
// --forget-together): the plain search's states compared without all of them give the same
// number, which is at most what leaving out either alone leaves; a name that is no part is refused.
TEST(FixpointSearch, TheGrowthAnalysisCountsWhatForgettingPartsTogetherWouldMerge) {
  SearchOptions options = bounded(Semantics::Fp8sm, 1, 1);
  options.checks.add(Invariant::I3);
  const PlainSearch plain = plain_search(options, true);
  const std::vector<std::string> together = {"program.driver.step_graph", "program.interpreter.scopes"};
  StateGrowthOptions growth_options;
  growth_options.depth = kMaxFixpointDepth;
  growth_options.forgetting = true;
  growth_options.forget_together = together;
  const StateGrowth growth = measure_state_growth(options, growth_options);
  ASSERT_TRUE(growth.fixpoint);
  ModelRunner runner(options.semantics, options.checks, options.canonical_ids, options.abstractions);
  auto root = std::make_unique<ModelState>();
  runner.initial(*root);
  const std::vector<std::string> names = runner.part_names(*root);
  std::set<std::vector<std::string>> without;
  for (std::vector<std::string> parts : plain.parts) {
    for (std::size_t p = 0; p < names.size(); ++p) {
      if (std::find(together.begin(), together.end(), names[p]) != together.end()) parts[p].clear();
    }
    without.insert(std::move(parts));
  }
  ASSERT_EQ(growth.distinct_without_together.size(), growth.states.size());
  EXPECT_EQ(growth.distinct_without_together.back(), without.size());
  for (std::size_t d = 0; d < growth.states.size(); ++d) {
    for (const std::string& name : together) {
      EXPECT_LE(growth.distinct_without_together[d], growth.distinct_without.at(name)[d]) << name << " depth " << d + 1;
    }
  }
  EXPECT_LT(without.size(), plain.states);

  growth_options.forget_together = {"program.driver.no_such_part"};
  EXPECT_THROW(measure_state_growth(options, growth_options), std::invalid_argument);
}

// Renumbering the keys after every layer keeps their order: the first layers of a search to the
// fixpoint are those of the depth-bounded search with the same bounds, and so are its
// counterexamples (upstream violates I1 in two statements).
TEST(FixpointSearch, ItsFirstLayersAreTheDepthBoundedSearchs) {
  for (Semantics semantics : spec::kAllSemantics) {
    SearchOptions options = bounded(semantics, 1, 2);
    options.depth = 6;
    const SearchResult depth_bounded = search(options);
    options.until_fixpoint = true;
    options.threads = 2;
    const SearchResult to_fixpoint = search(options);  // gives up past 6 layers
    EXPECT_EQ(to_fixpoint.stop_reason, to_fixpoint.fixpoint ? StopReason::None : StopReason::NoFixpoint);
    ASSERT_EQ(to_fixpoint.layers.size(), depth_bounded.layers.size()) << spec::name(semantics);
    for (std::size_t d = 0; d < depth_bounded.layers.size(); ++d) {
      EXPECT_EQ(to_fixpoint.layers[d].frontier, depth_bounded.layers[d].frontier) << d;
      EXPECT_EQ(to_fixpoint.layers[d].transitions, depth_bounded.layers[d].transitions) << d;
    }
    ASSERT_EQ(to_fixpoint.counterexamples.size(), depth_bounded.counterexamples.size());
    for (std::size_t i = 0; i < depth_bounded.counterexamples.size(); ++i) {
      EXPECT_EQ(spec::print_scenario(to_fixpoint.counterexamples[i].program),
                spec::print_scenario(depth_bounded.counterexamples[i].program));
    }
  }
}

// Bounds refuse what they do not hold: no statement of a search within one open block opens a
// second one, and none within one node holds two.
TEST(FixpointSearch, TakesNoStatementPastABound) {
  const SearchOptions options = bounded(Semantics::Fp8sm, 1, 1);
  const SearchResult result = [&] {
    SearchOptions o = options;
    o.depth = 5;
    o.programs = [&](int, const SearchPath& path) {
      ModelRunner runner(o.semantics, o.checks, true, o.abstractions);
      auto state = std::make_unique<ModelState>();
      runner.initial(*state);
      for (const Statement& s : path.statements()) {
        runner.apply(*state, s);
        ASSERT_LE(state->facts.open.size(), 1u);
        ASSERT_LE(live_nodes(*state), 1);
        ASSERT_LE(longest_held_body(*state), 1);
      }
    };
    return search(o);
  }();
  EXPECT_TRUE(result.complete);
}

// Forgetting the statements no body can replay changes nothing a program does: long random
// programs give the same step results with the log kept whole and with it cut after every
// statement, and the cut log stays short.
TEST(FixpointSearch, ForgettingTheUnreadableLogChangesNoResult) {
  spec::ProgramShape shape;
  shape.modules = 2;
  shape.tapes = 1;
  for (Semantics semantics : spec::kAllSemantics) {
    int shorter = 0;  // programs whose log the cuts kept shorter than the whole
    for (std::uint64_t index = 0; index < 200; ++index) {
      const spec::Program program = spec::random_program(7, index, 80, shape);
      interpreter::Interpreter whole(semantics, nullptr);
      interpreter::Interpreter cut(semantics, nullptr);
      whole.keep_steps(true);
      cut.keep_steps(true);
      std::size_t longest_cut = 0;
      for (const Statement& s : program.statements) {
        whole.feed(s);
        cut.feed(s);
        cut.forget_unreadable_log();
        longest_cut = std::max(longest_cut, cut.state().log.size());
      }
      whole.end_of_file();
      cut.end_of_file();
      ASSERT_EQ(whole.steps().size(), cut.steps().size()) << index;
      for (std::size_t i = 0; i < whole.steps().size(); ++i) {
        EXPECT_EQ(whole.steps()[i].forward_updates, cut.steps()[i].forward_updates) << index << " step " << i;
        EXPECT_EQ(whole.steps()[i].backward_updates, cut.steps()[i].backward_updates) << index << " step " << i;
        EXPECT_EQ(whole.steps()[i].raised, cut.steps()[i].raised) << index << " step " << i;
      }
      shorter += longest_cut < whole.state().log.size() ? 1 : 0;
    }
    EXPECT_GT(shorter, 100) << spec::name(semantics);
  }
}

}  // namespace
}  // namespace fp8sm::explorer
