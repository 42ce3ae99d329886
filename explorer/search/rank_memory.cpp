// How a rank sizes its seen-set for a layer, and keeps within its share of --max-memory.
//
// A depth-bounded search's memory peaks in its last layer: the table holding every state, and
// the layer's parents (24 bytes each, given back as they are read). Sized for the layer at its
// start, the table would sit beside all the parents, and it would be sized on a guess (the
// layers before carried forward) that may be a tenth too many. So a one-rank search sizes it
// for the last layer late: at its start only as far as the guess less the parents' bytes,
// and once full, for what the parents read so far project, 95 % full (nothing is added after
// it). Several ranks size each layer at its start (their layers are merged in rounds).
#include <algorithm>

#include "explorer/search/rank_search.hpp"

namespace fp8sm::explorer {

namespace {

// The parents that must have been read before their rate of new states says more than the
// layers before did.
constexpr double kProjectFrom = 0.01;
// The projection's allowance: states per parent vary along a layer.
constexpr double kProjectionMargin = 1.02;
// A table that must move for the rest of the layer grows at least this much, so that a short
// projection costs few passes over it.
constexpr double kLeastLateGrowth = 1.1;

}  // namespace

void RankSearch::reserve_for_next_layer() {
  const std::size_t stored = state_.seen.size();
  const std::size_t parents = state_.frontier.size();
  grow_late_ = false;
  if (state_.last_parents > 0) {
    const double per_parent = static_cast<double>(stored - state_.stored_before_last) /
                              static_cast<double>(state_.last_parents);
    const double growth =
        state_.per_parent_before > 0 ? std::clamp(per_parent / state_.per_parent_before, 1.0, 1.5) : 1.0;
    const auto expected = static_cast<std::size_t>(static_cast<double>(stored) +
                                                   1.05 * growth * per_parent * static_cast<double>(parents));
    const std::size_t expected_bytes = state_.seen.bytes_for(expected);
    if (options_.max_memory == 0 || expected_bytes + state_.stored_bytes() - state_.seen.bytes() <= memory_share_) {
      const bool last_layer = alone() && !options_.until_fixpoint && state_.depth_done + 1 == options_.depth;
      if (last_layer) {
        // What the table may take now that the parents are all held: the table's bytes are
        // about its states' (its slot narrows only at powers of two).
        const double room = 1.0 - std::min(1.0, static_cast<double>(state_.frontier.bytes()) /
                                                    static_cast<double>(expected_bytes));
        state_.seen.reserve(std::max(stored, static_cast<std::size_t>(static_cast<double>(expected) * room)));
        grow_late_ = true;
        layer_expected_ = expected;
        layer_start_stored_ = stored;
      } else {
        state_.seen.reserve(expected);
      }
    }
    state_.per_parent_before = per_parent;
  }
  state_.stored_before_last = stored;
  state_.last_parents = parents;
}

void RankSearch::grow_for_rest_of_layer(std::size_t index, std::size_t successors) {
  const std::size_t stored = state_.seen.size();
  const std::size_t parents = state_.frontier.size();
  std::size_t projected = layer_expected_;
  if (static_cast<double>(index) >= kProjectFrom * static_cast<double>(parents)) {
    const double per_parent = static_cast<double>(stored - layer_start_stored_) / static_cast<double>(index);
    projected = stored + static_cast<std::size_t>(kProjectionMargin * per_parent * static_cast<double>(parents - index));
  }
  projected = std::max(projected, stored + successors);
  const double slots = static_cast<double>(state_.seen.home_slots());
  if (static_cast<double>(projected) > FingerprintSet::kFullestLoad * slots) {
    projected = std::max(projected, static_cast<std::size_t>(FingerprintSet::kFullestLoad * kLeastLateGrowth * slots));
  }
  if (options_.max_memory != 0 && state_.seen.bytes_for(projected, FingerprintSet::kFullestLoad) + stored_bytes() -
                                          state_.seen.bytes() > memory_share_) {
    grow_late_ = false;  // the table grows by fifths, and the budget is checked state by state
    return;
  }
  state_.seen.reserve(projected, FingerprintSet::kFullestLoad);
}

bool RankSearch::over_memory_budget(const SuccessorRecord& record, int length) const {
  std::size_t needed = stored_bytes();
  if (state_.seen.full()) needed += state_.seen.bytes_while_growing() - state_.seen.bytes();
  if (length < options_.depth) needed += next_.growth_for(record.path);
  return needed > memory_share_;
}

}  // namespace fp8sm::explorer
