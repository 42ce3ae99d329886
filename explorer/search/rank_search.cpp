#include "explorer/search/rank_search.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <stdexcept>

namespace fp8sm::explorer {

namespace {

std::uint64_t peak_memory_bytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoull(line.substr(6)) * 1024u;
  }
  return 0;
}

}  // namespace

RankSearch::RankSearch(const EngineOptions& options, const SearchModel& model, Ranks& ranks,
                       const ProgressCallback& progress)
    : options_(options),
      model_(model),
      ranks_(ranks),
      progress_(ranks.rank() == 0 ? progress : ProgressCallback{}),
      checks_(model.checked()),
      close_(model.close_code()),
      state_(options.coverage ? model.table_rows() : 0) {
  const std::uint64_t ranks_count = static_cast<std::uint64_t>(ranks.size());
  memory_share_ = options.max_memory / ranks_count;
  // A share smaller than a rank holds before its first state (its empty seen-set, and a frontier
  // of the initial state) could only be broken, not kept: refused.
  if (options.max_memory != 0) {
    Frontier root;
    root.push_back(FrontierEntry{});
    const std::size_t least = state_.seen.bytes() + root.bytes();
    if (memory_share_ < least) {
      throw std::invalid_argument(fmt::format(
          "--max-memory: {} bytes{} is less than the {} bytes a search holds before its first state (its empty tables)",
          memory_share_, ranks_count > 1 ? " per process" : "", least));
    }
  }
  if (options.coverage) {
    state_.row_transitions.assign(state_.finds.rows(), 0);
    coverage_seen_in_.assign(state_.finds.rows(), 0);
  }
}

SearchResult RankSearch::run() {
  const auto start = std::chrono::steady_clock::now();
  cursor_ = model_.cursor();
  result_.carried = model_.carried();
  if (!options_.snapshot_dir.empty()) open_snapshot_dir();
  if (options_.resume) {
    resume();
  } else {
    start_at_root();
  }
  if (progress_) progress_(state_.layers.back(), seconds_since(start));
  expansion_ = std::make_unique<LayerExpansion>(options_, model_);
  for (int depth = state_.depth_done; depth < options_.depth; ++depth) {
    reserve_for_next_layer();
    expand_layer(depth);
    if (stopped_ != StopReason::None) break;
    finish_layer(depth + 1);
    if (progress_) progress_(state_.layers.back(), seconds_since(start));
    // A layer that adds no state: every successor of the states stored was stored already, so
    // no later layer adds one either. The states stored are all the model can reach.
    if (options_.until_fixpoint && state_.layers.back().frontier == 0) {
      result_.fixpoint = true;
      break;
    }
    if (!options_.snapshot_dir.empty() && depth + 1 < options_.depth) save_snapshot();
  }
  // Layers to the last and no fixpoint: what was explored proves nothing about longer programs.
  if (options_.until_fixpoint && !result_.fixpoint && stopped_ == StopReason::None) stopped_ = StopReason::NoFixpoint;
  return finish(start);
}

double RankSearch::seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The initial state: stored by its owner, which also judges its end.
void RankSearch::start_at_root() {
  const ModelStep root = cursor_->initial();
  if (owner_of(root.fingerprint, ranks_.size()) == me()) {
    state_.seen.insert(root.fingerprint);
    state_.frontier.push_back(FrontierEntry{});
    record_violations(root.end_violations, root.fingerprint, 0, 0, Judged::End, SearchPath{});
  }
  state_.distinct = 1;
  state_.layers.push_back(LayerStats{0, 1, 1, 0});
}

// Layer `depth` is complete: its counts summed over the ranks, its states the frontier.
void RankSearch::finish_layer(int depth) {
  std::uint64_t counts[2] = {layer_new_, layer_transitions_};
  ranks_.all_reduce(counts, 2, Ranks::Reduce::Sum);
  state_.distinct += counts[0];
  state_.transitions += counts[1];
  state_.layers.push_back(LayerStats{depth, counts[0], state_.distinct, counts[1]});
  state_.depth_done = depth;
  std::swap(state_.frontier, next_);
  next_.clear();
  list_programs(depth);
  if (options_.until_fixpoint) rekey_frontier();
}

// Keys hold one byte a layer, so they run out past kMaxKeyLayers layers; a search to the
// fixpoint has no last layer. So its keys are renumbered after every layer: each state's key
// becomes its rank among all ranks' states of the layer, shifted up a byte, and its children's
// keys put their link in that byte (key_depth). Ranks keep the keys' order, and the order is all
// the search reads of them: the same first discoveries, counts and counterexamples. Several
// ranks need every key of the layer to rank their own (8 bytes a state of the layer, a while).
void RankSearch::rekey_frontier() {
  Frontier& frontier = state_.frontier;
  if (alone()) {
    for (std::size_t i = 0; i < frontier.size(); ++i) frontier.set_key(i, static_cast<std::uint64_t>(i) << 8);
    return;
  }
  Bytes mine(frontier.size() * sizeof(std::uint64_t));
  for (std::size_t i = 0; i < frontier.size(); ++i) {
    const std::uint64_t key = frontier.key(i);
    std::memcpy(mine.data() + i * sizeof(std::uint64_t), &key, sizeof key);
  }
  const std::vector<Bytes> all = ranks_.all_gather(mine);
  mine = Bytes();
  // Each rank's keys ascend, and so do this rank's: one pass over each rank's keys finds how
  // many lie below each of this rank's.
  std::vector<std::size_t> below(all.size(), 0);
  for (std::size_t i = 0; i < frontier.size(); ++i) {
    const std::uint64_t key = frontier.key(i);
    std::uint64_t rank = 0;
    for (std::size_t r = 0; r < all.size(); ++r) {
      const std::size_t n = all[r].size() / sizeof(std::uint64_t);
      for (;;) {
        if (below[r] == n) break;
        std::uint64_t theirs;
        std::memcpy(&theirs, all[r].data() + below[r] * sizeof(std::uint64_t), sizeof theirs);
        if (theirs >= key) break;
        ++below[r];
      }
      rank += below[r];
    }
    frontier.set_key(i, rank << 8);
  }
}

void RankSearch::expand_layer(int depth) {
  layer_new_ = 0;
  layer_transitions_ = 0;
  round_stored_global_ = state_.distinct;
  if (alone()) {
    expand_alone(depth);
  } else {
    expand_in_rounds(depth);
  }
}

// One rank: the chains of each parent merged as they come, in key order (the one-process
// search), and a budget stops at the very state that reaches it. An interrupt stops it before the next parent, so that a long layer stops promptly.
void RankSearch::expand_alone(int depth) {
  constexpr std::size_t kAhead = 16;  // the table's slots asked for ahead of their lookup
  const int length = depth + 1;
  if (interrupt_requested()) {
    stopped_ = StopReason::Interrupted;
    return;
  }
  expansion_->expand(state_.frontier, 0, state_.frontier.size(), [&](std::size_t index, const Links& links) {
    if (interrupt_requested()) {
      stopped_ = StopReason::Interrupted;
      return false;
    }
    const std::size_t n = links.links.size();
    if (grow_late_ && state_.seen.size() + n > state_.seen.capacity()) grow_for_rest_of_layer(index, n);
    // Asked for already if this parent was looked ahead to (below); then this costs little.
    for (std::size_t j = 0; j < std::min(kAhead, n); ++j) state_.seen.prefetch(links.links[j].fingerprint);
    std::size_t i = 0;
    const FrontierEntry parent = state_.frontier[index];
    state_.frontier.release_before(index);  // read once, in index order: the parents before are done with
    for_each_record(parent.key, parent.path, key_depth(depth), links, options_.coverage, [&](const SuccessorRecord& record) {
      if (i + kAhead < n) state_.seen.prefetch(links.links[i + kAhead].fingerprint);
      ++i;
      if (stopped_ == StopReason::None) merge_alone(record, length);
    });
    return stopped_ == StopReason::None;
  }, [&](const Links& next) {
    // A parent's first successors are asked for while the parent before it is consumed, its
    // later ones kAhead successors ahead (a parent has one or two successors on average: asked
    // for at its own start, they would come too late).
    for (std::size_t j = 0; j < std::min(kAhead, next.links.size()); ++j) state_.seen.prefetch(next.links[j].fingerprint);
  });
}

void RankSearch::merge_alone(const SuccessorRecord& record, int length) {
  if (options_.max_memory != 0) {
    const bool is_new = !state_.seen.contains(record.fingerprint);
    if (over_memory_budget(record, length, is_new, violations_counted(record, is_new), ViolationCounts{})) {
      stopped_ = StopReason::MaxMemory;  // the cut falls on this successor: nothing of it counts
      return;
    }
  }
  count_transition(record, length);
  if (!state_.seen.insert(record.fingerprint)) return;
  remember(record, length);
  count_new(record, length);
  if (options_.max_states != 0 && state_.seen.size() >= options_.max_states) {
    stopped_ = StopReason::MaxStates;
    return;
  }
  count_next(record, length);
}

// A new state of the next layer: kept in the next frontier if the search goes past it, and
// for --programs if it is a complete program.
void RankSearch::remember(const SuccessorRecord& record, int length) {
  if (length < options_.depth) next_.push_back(FrontierEntry{record.key, record.path});
  if (options_.programs && record.top_level) programs_.push_back(FrontierEntry{record.key, record.path});
}

// Everything a successor makes count, up to a cut (`at`: the cut falls on this successor; at
// the memory budget, it did not fit and counts for nothing).
void RankSearch::commit(const SuccessorRecord& record, bool is_new, StopReason at, int length) {
  if (at == StopReason::MaxMemory) return;  // what did not fit counts for nothing
  count_transition(record, length);
  if (!is_new) return;
  count_new(record, length);
  if (at == StopReason::MaxStates) return;
  count_next(record, length);
}

// The transition that reached the successor, where its chain starts (a later link's is
// counted by count_next), and its verdict.
void RankSearch::count_transition(const SuccessorRecord& record, int length) {
  if (record.first_of_chain) {
    ++layer_transitions_;
    if (options_.coverage) count_rows(record.rows, record.key, record, length);
  }
  record_violations(record.violations, record.fingerprint, length, record.key, Judged::Transition, record.path);
}

// A state stored for the first time: counted, and its end judged at top level.
void RankSearch::count_new(const SuccessorRecord& record, int length) {
  ++layer_new_;
  if (record.top_level) {
    record_violations(record.end_violations, record.fingerprint, length, record.key, Judged::End, record.path);
  }
}

// The next link of a new state's chain: its transition counts (a state seen before had its
// chain counted when first seen).
void RankSearch::count_next(const SuccessorRecord& record, int length) {
  if (record.top_level) return;
  ++layer_transitions_;
  if (options_.coverage) count_rows(record.next_rows, record.key + 1, record, length);
}

// One transition's rows: each counts once for it, and the first transition to take a row is
// its witness (the program of the successor, closed).
void RankSearch::count_rows(const RowSpan& rows, std::uint64_t key, const SuccessorRecord& record, int length) {
  ++coverage_serial_;
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const std::uint16_t row = rows[r];
    if (coverage_seen_in_[row] == coverage_serial_) continue;
    coverage_seen_in_[row] = coverage_serial_;
    if (state_.row_transitions[row]++ == 0) {
      state_.finds.offer_row(row, Find{true, static_cast<std::uint8_t>(length), key, Judged::Transition, record.path});
    }
  }
}

// A transition or a program end violated something: the state it reached counts as violating,
// and the first program to do so is a candidate counterexample.
void RankSearch::record_violations(spec::InvariantSet violations, const Fingerprint& fingerprint, int length, std::uint64_t key,
                       Judged judged, const SearchPath& path) {
  if (violations.empty()) return;
  for (spec::Invariant i : spec::kAllInvariants) {
    if (!violations.contains(i) || !checks_.contains(i)) continue;
    state_.violating.try_emplace(i, RankState::kViolationSetSlots).first->second.insert(fingerprint);
    if (!state_.finds.violation(i).found) {
      state_.finds.offer_violation(i, Find{true, static_cast<std::uint8_t>(length), key, judged, path});
    }
  }
}

SearchResult RankSearch::finish(std::chrono::steady_clock::time_point start) {
  // A layer stopped midway counts in the totals, not in the layer table (NoFixpoint stops after
  // a whole layer, already in both).
  const bool midway = stopped_ != StopReason::None && stopped_ != StopReason::NoFixpoint;
  std::uint64_t partial[2] = {midway ? layer_new_ : 0, midway ? layer_transitions_ : 0};
  ranks_.all_reduce(partial, 2, Ranks::Reduce::Sum);
  result_.layers = state_.layers;
  result_.depth_completed = state_.depth_done;
  result_.distinct = state_.distinct + partial[0];
  result_.transitions = state_.transitions + partial[1];
  result_.complete = stopped_ == StopReason::None;
  result_.stop_reason = stopped_;
  result_.ranks = ranks_.size();
  result_.memory_share = memory_share_;
  if (stopped_ != StopReason::MaxMemory || alone()) result_.memory_stop_rank = -1;

  std::vector<std::uint64_t> violating(spec::kAllInvariants.size(), 0);
  for (const auto& [invariant, states] : state_.violating) violating[static_cast<std::size_t>(invariant)] = states.size();
  ranks_.all_reduce(violating.data(), violating.size(), Ranks::Reduce::Sum);
  for (spec::Invariant i : spec::kAllInvariants) {
    if (violating[static_cast<std::size_t>(i)] > 0) result_.violating_states[i] = violating[static_cast<std::size_t>(i)];
  }
  state_.finds.reduce(ranks_);
  for (spec::Invariant i : spec::kAllInvariants) {
    const Find& find = state_.finds.violation(i);
    if (!find.found || !checks_.contains(i)) continue;
    Counterexample example;
    example.invariant = i;
    example.length = find.length;
    example.reason = reason_of(find, i);
    example.program = model_.program(find.path);
    result_.counterexamples.push_back(std::move(example));
  }
  if (options_.coverage) {
    result_.row_transitions = state_.row_transitions;
    ranks_.all_reduce(result_.row_transitions.data(), result_.row_transitions.size(), Ranks::Reduce::Sum);
    for (std::size_t row = 0; row < state_.finds.rows(); ++row) {
      const Find& find = state_.finds.row(row);
      result_.row_witnesses.push_back(
          find.found ? RowWitness{model_.program(find.path), find.length} : RowWitness{});
    }
  }
  result_.stored_bytes = ranks_.sum(stored_bytes());
  result_.exchanged_bytes = ranks_.sum(ranks_.bytes_sent());
  const std::uint64_t peak = peak_memory_bytes();
  for (const Bytes& theirs : ranks_.all_gather(Bytes(reinterpret_cast<const std::uint8_t*>(&peak),
                                                     reinterpret_cast<const std::uint8_t*>(&peak) + sizeof peak))) {
    std::uint64_t value = 0;
    std::memcpy(&value, theirs.data(), std::min(theirs.size(), sizeof value));
    result_.peak_memory_per_rank.push_back(value);
  }
  result_.peak_memory_bytes = *std::max_element(result_.peak_memory_per_rank.begin(), result_.peak_memory_per_rank.end());
  result_.collision_probability = FingerprintSet::collision_probability(static_cast<double>(result_.distinct));
  result_.seconds = seconds_since(start);
  return std::move(result_);
}

// Why the find violated `invariant`: its transition (or program end) replayed on a state rebuilt
// from the root; deterministic, so the same verdict as when it was found.
std::string RankSearch::reason_of(const Find& find, spec::Invariant invariant) const {
  return cursor_->reason(find.path, find.judged == Judged::End, invariant);
}
}  // namespace fp8sm::explorer
