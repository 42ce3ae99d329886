#include "explorer/search/search.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <stdexcept>

#include "explorer/model/state_growth.hpp"
#include "explorer/search/engine.hpp"
#include "explorer/search/program_model.hpp"
#include "explorer/search/rank_search.hpp"
#include "explorer/search/ranks.hpp"

namespace fp8sm::explorer {

namespace {

void check_search_options(const SearchOptions& options) {
  if (options.until_fixpoint) {
    // Without bounds, programs hold ever more blocks or nodes: no fixpoint, and the flat
    // state's lists would overflow first.
    if (options.alphabet.bounds.open_blocks == 0 || options.alphabet.bounds.live_nodes == 0) {
      throw std::invalid_argument(
          "a search to the fixpoint needs bounds on the open blocks and the live nodes (docs/explorer.md "
          "\"Fixpoint\")");
    }
    if (options.depth > kMaxFixpointDepth) {
      throw std::invalid_argument(fmt::format(
          "a search to the fixpoint gives up past at most {} layers (its paths' capacity), not {}", kMaxFixpointDepth,
          options.depth));
    }
  } else if (options.depth > kMaxSearchDepth) {
    throw std::invalid_argument(fmt::format(
        "the search's flat states hold programs of up to {} statements (docs/explorer.md \"Capacities\"), not {}",
        kMaxSearchDepth, options.depth));
  }
  if (options.alphabet.modules > kMaxSearchModules) {
    throw std::invalid_argument(fmt::format("the search's flat states hold up to {} modules, not {}", kMaxSearchModules,
                                            options.alphabet.modules));
  }
}

void check_engine_options(const EngineOptions& options) {
  if (options.resume && options.snapshot_dir.empty()) {
    throw std::invalid_argument("resuming a search needs the directory of its snapshot");
  }
  if (options.programs && (options.max_states != 0 || options.max_memory != 0 || !options.snapshot_dir.empty())) {
    throw std::invalid_argument("listing the programs of a search needs the whole search: no budget, no snapshot");
  }
  if (options.programs && options.programs_per_message == 0) {
    throw std::invalid_argument("listing the programs of a search needs at least one program per message");
  }
  if (options.until_fixpoint && !options.snapshot_dir.empty()) {
    throw std::invalid_argument("a search to the fixpoint takes no snapshot (its keys are renumbered every layer)");
  }
}

// What keeps a search to the fixpoint from its fixpoint: the growth analysis of the same
// programs, to the depth the search gave up at or until a layer leaves more than kGrowthBudget
// states stored, whichever comes first. It replays every path and keeps every part's values, as
// bench/state_growth does, at about 25 thousand states a second: some seconds, and at most a
// few times that where the last layer is some times wider than the budget.
constexpr std::size_t kGrowthBudget = 100'000;

SearchResult::StillGrowing still_growing(const SearchOptions& options, const SearchResult& result) {
  StateGrowthOptions growth_options;
  growth_options.depth = std::max(1, result.depth_completed);
  growth_options.max_states = kGrowthBudget;
  const StateGrowth growth = measure_state_growth(options, growth_options);
  SearchResult::StillGrowing growing;
  growing.depth = growth.layers();
  growing.states = growth.states.empty() ? 0 : growth.states.back();
  for (const std::string& part : growth.still_growing()) {
    growing.parts.push_back(part);
    const auto example = growth.examples.find(part);
    growing.examples.push_back(example == growth.examples.end() || example->second.empty() ? ""
                                                                                         : example->second.front().program);
  }
  return growing;
}

}  // namespace

SearchResult run_engine(const EngineOptions& options, const SearchModel& model, Ranks& ranks,
                        const ProgressCallback& progress) {
  check_engine_options(options);
  return RankSearch(options, model, ranks, progress).run();
}

SearchResult search(const SearchOptions& options, Ranks& ranks, const ProgressCallback& progress) {
  check_search_options(options);
  const ProgramModel model(options);
  SearchResult result = run_engine(options, model, ranks, progress);
  // Rank 0 reports; the other ranks would repeat the same analysis for nothing.
  if (result.stop_reason == StopReason::NoFixpoint && ranks.rank() == 0) {
    result.still_growing = still_growing(options, result);
  }
  return result;
}

SearchResult search(const SearchOptions& options, const ProgressCallback& progress) {
  SingleRank alone;
  return search(options, alone, progress);
}

}  // namespace fp8sm::explorer
