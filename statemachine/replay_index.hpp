// fp8sm: what a recompute looks up at every module it replays (MachineData::replay_entry, read
// by the guards HasReplayEntry and ReplayEntryIsFp8 and the action ReplayStashedMeta): the run
// of the module in its checkpoint's stash that this run replays (the k-th, when the recompute
// has replayed k runs of the module so far), and that run's rank among the module's FP8 runs.
//
// The flat state answers by scanning its two lists (the frames' replayed runs, the checkpoint's
// stashed runs): each holds at most 32 entries, and an index there would add bytes to every
// state the search copies and hashes, and ids (frames, captures) that explorer/canonical_state
// would have to rename. A growable machine runs programs of any length (`explorer run`, the
// runtime): there the scans made a recompute of N module runs cost O(N^2). So its two lists are
// the classes below, which hold the same runs and keep, beside them, what the lookup needs:
// a lookup, an add and a pop are a few hash-table operations, and dropping a checkpoint reads
// its own runs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "statemachine/grouped_table.hpp"

namespace fp8sm::statemachine {

// The stashed run a recompute's run of a module replays: whether it ran in FP8 (only those have
// a stashed meta) and how many FP8 runs of the module the checkpoint stashed before it (which
// names the stashed clone, Hooks::replay_stash).
struct ReplayEntry {
  bool fp8 = false;
  unsigned fp8_rank = 0;
};

namespace replay_index_detail {
// One key for a pair of 32-bit ids (a growable machine's ids), ordered by the first.
inline std::uint64_t pair_key(std::uint64_t first, std::uint64_t second) { return (first << 32) | second; }
}  // namespace replay_index_detail

// The growable form of MachineData::stash_runs: every checkpoint's stashed runs (Run: capture,
// module, fp8), in order per checkpoint; and per (checkpoint, module) the module's runs, each
// with its FP8 rank, so that the k-th is found without reading the others.
template <class Run>
class IndexedStash {
 public:
  using Id = decltype(Run::capture);
  using value_type = Run;

  std::size_t size() const { return by_capture_.size(); }
  bool empty() const { return by_capture_.empty(); }

  // Appends `run` to its checkpoint's runs.
  void add(const Run& run) {
    const std::uint64_t key = replay_index_detail::pair_key(run.capture, run.module);
    const auto& earlier = by_module_.group(key);
    const unsigned fp8_rank = earlier.empty() ? 0u : earlier.back().fp8_rank + (earlier.back().fp8 ? 1u : 0u);
    by_capture_.push_back(run.capture, run);
    by_module_.push_back(key, ReplayEntry{run.fp8, fp8_rank});
  }
  // Drops checkpoint `capture`'s runs.
  void erase(Id capture) {
    for (const Run& run : by_capture_.group(capture)) by_module_.erase(replay_index_detail::pair_key(capture, run.module));
    by_capture_.erase(capture);
  }
  // Checkpoint `capture`'s runs, in order: [first, last).
  auto runs_of(Id capture) const {
    const auto& runs = by_capture_.group(capture);
    return std::make_pair(runs.begin(), runs.end());
  }
  // The k-th run (from 0) of `module` among checkpoint `capture`'s runs, if it ran that often.
  std::optional<ReplayEntry> run_of_module(Id capture, Id module, std::size_t k) const {
    const auto& runs = by_module_.group(replay_index_detail::pair_key(capture, module));
    if (k >= runs.size()) return std::nullopt;
    return runs[k];
  }

 private:
  GroupedTable<Id, Run> by_capture_;
  GroupedTable<std::uint64_t, ReplayEntry> by_module_;  // key: capture, then module
};

// The growable form of MachineData::replayed: the runs the open recomputes have replayed (Run:
// frame, module), in order; and how many runs of each module each frame has replayed. A list
// for the rest of the machine (push_back, pop_back, back, iteration).
template <class Run>
class IndexedReplayedRuns {
 public:
  using Id = decltype(Run::frame);
  using value_type = Run;

  std::size_t size() const { return runs_.size(); }
  bool empty() const { return runs_.empty(); }
  const Run& back() const { return runs_.back(); }
  auto begin() const { return runs_.begin(); }
  auto end() const { return runs_.end(); }

  void push_back(const Run& run) {
    runs_.push_back(run);
    ++count_[replay_index_detail::pair_key(run.frame, run.module)];
  }
  void pop_back() {
    const auto it = count_.find(replay_index_detail::pair_key(runs_.back().frame, runs_.back().module));
    if (--it->second == 0) count_.erase(it);
    runs_.pop_back();
  }
  // How many runs of `module` the recompute of frame `frame` has replayed.
  std::size_t count(Id frame, Id module) const {
    const auto it = count_.find(replay_index_detail::pair_key(frame, module));
    return it == count_.end() ? 0u : it->second;
  }

 private:
  std::vector<Run> runs_;
  std::unordered_map<std::uint64_t, std::uint32_t> count_;  // key: frame, then module; no zero kept
};

}  // namespace fp8sm::statemachine
