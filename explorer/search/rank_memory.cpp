// How a rank sizes its seen-set for a layer, and keeps within its share of --max-memory: its
// seen-set, frontiers and violation sets, each successor checked before it counts.
//
// The seen-set is sized once a layer, at the layer's start, for the states the layers before
// say it will add, and a twentieth more: the table is then at most about 80 % full for most of
// the layer, where probes are cheap, and it does not grow again in it.
//
// Under a memory budget that this table and the layer's parents (24 bytes each, given back as
// they are read) would exceed together, a one-rank search's last layer, where a depth-bounded
// search peaks, is sized late instead: at its start, the largest table that fits beside the
// parents, filled to 95 %; then, with most parents read and given back, the table the parents
// read so far project, 95 % full (nothing is added after this layer), or the largest that
// fits. That trades time for memory: at depth 7 the growth is a pass over 350 million states,
// and the fuller table is slower to probe (docs/performance.md). Several ranks, a search to the
// fixpoint and the layers before the last grow by fifths under a budget: their rounds read the
// whole frontier to the layer's end, or they build the next frontier as they read this one.
#include <algorithm>

#include "explorer/search/rank_search.hpp"

namespace fp8sm::explorer {

namespace {

// The guess at a layer's new states, when the table is sized for the whole layer: a twentieth
// more, since growing again late in the layer would be a pass over every state stored.
constexpr double kLayerMargin = 1.05;
// The parents that must have been read before their rate of new states says more than the
// layers before did.
constexpr double kProjectFrom = 0.01;
// The projection's allowance on the states still to come. Later parents find more of their
// successors stored already, so at depth 6 and 7 the average rate was 8 to 20 % high for the
// last parents; this covers a model whose rate does not fall.
constexpr double kProjectionMargin = 1.02;

}  // namespace

// This rank's share of the budget less what its frontiers and violation sets hold.
std::size_t RankSearch::budget_for_seen_set() const {
  const std::size_t others = stored_bytes() - state_.seen.bytes();
  return memory_share_ > others ? memory_share_ - others : 0;
}

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
                                                   kLayerMargin * growth * per_parent * static_cast<double>(parents));
    const bool last_layer = alone() && !options_.until_fixpoint && state_.depth_done + 1 == options_.depth;
    if (options_.max_memory == 0 || state_.seen.bytes_for(expected) <= budget_for_seen_set()) {
      state_.seen.reserve(expected);
    } else if (last_layer) {
      const std::size_t fits = state_.seen.most_within(budget_for_seen_set(), FingerprintSet::kFullestLoad);
      state_.seen.reserve(std::min(fits, expected), FingerprintSet::kFullestLoad);
      grow_late_ = true;
      layer_expected_ = expected;
      layer_start_stored_ = stored;
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
  const std::size_t fits = state_.seen.most_within(budget_for_seen_set(), FingerprintSet::kFullestLoad);
  // The projection does not fit: the largest table that does, once (a few more parents given
  // back would make room for little more, at the price of a pass over every state); past it the
  // budget is checked state by state (over_memory_budget).
  if (fits < projected) grow_late_ = false;
  if (fits >= stored + successors) state_.seen.reserve(std::min(fits, projected), FingerprintSet::kFullestLoad);
}

spec::InvariantSet RankSearch::violations_counted(const SuccessorRecord& record, bool is_new) const {
  spec::InvariantSet into = record.violations;
  if (is_new && record.top_level) into.merge(record.end_violations);
  spec::InvariantSet counted;
  if (into.empty()) return counted;
  for (spec::Invariant i : spec::kAllInvariants) {
    if (!into.contains(i) || !checks_.contains(i)) continue;
    const auto set = state_.violating.find(i);
    if (set == state_.violating.end() || !set->second.contains(record.fingerprint)) counted.add(i);
  }
  return counted;
}

bool RankSearch::over_memory_budget(const SuccessorRecord& record, int length, bool is_new,
                                    const spec::InvariantSet& violations, const ViolationCounts& pending) const {
  if (!is_new && violations.empty()) return false;  // it adds nothing: as the last check left it
  std::size_t needed = stored_bytes();
  if (is_new) {
    if (state_.seen.full()) needed += state_.seen.bytes_while_growing() - state_.seen.bytes();
    if (length < options_.depth) needed += next_.growth_for(record.path);
  }
  for (spec::Invariant i : spec::kAllInvariants) {
    const std::uint64_t adding = pending[static_cast<std::size_t>(i)] + (violations.contains(i) ? 1 : 0);
    if (adding == 0) continue;
    // A set is made at its first state; one more state grows it by a fifth if it is full, as an
    // insertion does; several are reserved at once (reserve_violation_sets).
    static const FingerprintSet kMade(RankState::kViolationSetSlots);
    const auto found = state_.violating.find(i);
    const FingerprintSet& set = found == state_.violating.end() ? kMade : found->second;
    const std::size_t held = found == state_.violating.end() ? 0 : set.bytes();
    std::size_t peak = set.bytes();
    if (set.size() + adding > set.capacity()) {
      peak = adding == 1 ? set.bytes_while_growing() : set.bytes_while_reserving(set.size() + adding);
    }
    needed += peak - held;
  }
  return needed > memory_share_;
}

void RankSearch::reserve_violation_sets(const ViolationCounts& pending) {
  for (spec::Invariant i : spec::kAllInvariants) {
    const std::uint64_t adding = pending[static_cast<std::size_t>(i)];
    if (adding == 0) continue;
    FingerprintSet& set = state_.violating.try_emplace(i, RankState::kViolationSetSlots).first->second;
    if (set.size() + adding > set.capacity()) set.reserve(set.size() + adding);
  }
}

}  // namespace fp8sm::explorer
