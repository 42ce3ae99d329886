// What one rank of a search holds between layers: its part of the seen-set and of the
// violation sets, the frontier it expands next, its first finds and row counts, and the layers
// so far (the same on every rank). It is exactly what a snapshot holds (snapshot.hpp), so
// saving and loading it are here too.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

#include "explorer/search/fingerprint_set.hpp"
#include "explorer/search/first_finds.hpp"
#include "explorer/search/frontier.hpp"
#include "explorer/search/search.hpp"
#include "explorer/search/snapshot.hpp"

namespace fp8sm::explorer {

struct RankState {
  // A violation set's slots when it is made, at its first state: most hold few states.
  static constexpr std::size_t kViolationSetSlots = 16;

  explicit RankState(std::size_t table_rows) : finds(table_rows) {}

  FingerprintSet seen;                                     // the states this rank owns
  std::map<spec::Invariant, FingerprintSet> violating;     // of those, the ones reached by a violation
  Frontier frontier;                                       // the layer to expand next, in key order
  FirstFinds finds;                                        // this rank's earliest counterexamples and row witnesses
  std::vector<std::uint64_t> row_transitions;              // --coverage: this rank's counts per row
  std::vector<LayerStats> layers;                          // every rank's, summed: the report's table
  std::uint64_t distinct = 0;                              // all ranks' states, after the last layer
  std::uint64_t transitions = 0;                           // all ranks', after the last layer
  int depth_done = 0;                                      // the last complete layer
  // How the seen-set is reserved for the next layer (the last layer's growth per parent).
  std::uint64_t stored_before_last = 0;
  std::uint64_t last_parents = 0;
  double per_parent_before = 0;

  // The bytes of the tables and frontiers (the figure --max-memory bounds).
  std::size_t stored_bytes() const;
};

// Writes `state` as rank `rank` of `identity`'s search, after its layer `state.depth_done`.
void save_rank_state(const RankState& state, const SnapshotIdentity& identity, int rank, SnapshotWriter& out);
// Reads into `state` what save_rank_state wrote, checking that it is rank `rank`'s, of layer
// `layer`, of the search `identity`; SnapshotError otherwise. `state` is garbage after an error.
void load_rank_state(RankState& state, const SnapshotIdentity& identity, int rank, int layer, SnapshotReader& in);

}  // namespace fp8sm::explorer
