// Helpers shared by the tests: run a catalogue entry or a scenario text on the model.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "explorer/model/scenario_run.hpp"
#include "explorer/search/search.hpp"
#include "spec/catalogue.hpp"
#include "spec/scenario_parser.hpp"

namespace fp8sm::test_support {

inline spec::Program catalogue_program(const std::string& name) {
  const spec::CatalogueEntry* entry = spec::find_catalogue_entry(name);
  if (entry == nullptr) throw std::runtime_error("no catalogue entry " + name);
  return spec::parse_scenario(entry->text, name);
}

inline explorer::ScenarioReport run_text(const std::string& text, spec::Semantics semantics) {
  return explorer::run_scenario(spec::parse_scenario(text), semantics);
}

// A search of `depth` statements under `semantics`, every invariant checked.
inline explorer::SearchOptions search_options(spec::Semantics semantics, int depth, int threads = 1) {
  explorer::SearchOptions o;
  o.semantics = semantics;
  o.depth = depth;
  o.threads = threads;
  return o;
}

// Upstream's search to depth 4, every invariant checked, under memory budgets from `from` to `to`
// bytes, each a sixteenth larger than the last, by `search` (one process or several ranks): none
// stores more than its budget, and most stop the search. Upstream's violation sets grow in
// these budgets' layers, which is where a budget that left them out was broken.
template <class Search>
void expect_budgets_hold_the_violation_sets(std::uint64_t from, std::uint64_t to, Search search) {
  explorer::SearchOptions o = search_options(spec::Semantics::Upstream, 4);
  int tried = 0, stopped = 0;
  for (std::uint64_t budget = from; budget <= to; budget = budget * 17 / 16) {
    o.max_memory = budget;
    const explorer::SearchResult result = search(o);
    EXPECT_LE(result.stored_bytes, budget) << "a budget of " << budget << " bytes";
    ++tried;
    stopped += result.complete ? 0 : 1;
  }
  EXPECT_GT(2 * stopped, tried) << stopped << " of " << tried;  // most budgets stopped the search
}

inline spec::InvariantSet invariants(std::initializer_list<spec::Invariant> list) {
  spec::InvariantSet set;
  for (spec::Invariant i : list) set.add(i);
  return set;
}

// Whether some step of the report violates `invariant`.
inline bool violates(const explorer::ScenarioReport& report, spec::Invariant invariant) {
  for (const auto& step : report.steps) {
    if (step.violations.contains(invariant)) return true;
  }
  return false;
}

// The round trip a user makes with a counterexample: print it, parse it back, run it.
inline ::testing::AssertionResult replays(const explorer::Counterexample& c, spec::Semantics semantics) {
  const std::string text = spec::print_scenario(c.program);
  if (violates(explorer::run_scenario(spec::parse_scenario(text), semantics), c.invariant)) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << spec::id(c.invariant) << " does not replay under "
                                       << spec::name(semantics) << ":\n" << text;
}

}  // namespace fp8sm::test_support
