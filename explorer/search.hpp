// The exhaustive search: every well-formed program of up to `depth` statements, breadth first,
// each state stored once (a 64-bit fingerprint of its encoding in the seen-set, and its parent
// and statement in the search tree), so the first counterexample found for an invariant is a
// shortest one. A frontier state is not kept: it is rebuilt by replaying its path from the
// root (its depth in statements), then each successor costs one statement on a copy.
//
// Depth counts statements; a block counts as one plus its body, and closing it is free.
// Violations belong to transitions (a statement executed on a state) and to program ends
// (end of file at top level); both depend on the state alone, which is what makes storing each
// state once sound.
//
// Determinism: a state is named by its discovery key (search_path.hpp), the order in which a
// one-process search first reaches it; a layer is expanded in key order (in parallel, workers a
// bounded window ahead of the merge) and merged in key order, so results do not depend on
// --threads, nor on the number of ranks (below); a budget stops the search at the same state.
//
// Ranks: the search may run as K processes (`mpirun -np K explorer ...`, or ThreadRanks in the
// tests), each owning the states whose fingerprint it is given (ranks.hpp): it keeps its part of
// the seen-set and of the frontier, expands its states, and sends each successor, with the path
// that rebuilds it, to its owner, in rounds of parents every rank agrees on. The report is the
// same for any K (docs/explorer.md, "Many processes").
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "explorer/alphabet.hpp"
#include "explorer/search_path.hpp"
#include "spec/invariants.hpp"
#include "spec/scenario.hpp"
#include "spec/semantics.hpp"

namespace fp8sm::explorer {

// The flat state's capacities (statemachine/storage.hpp and the lists' declarations) are
// sized for programs of up to this many statements over up to this many modules; search()
// refuses more. A program within them that still needs more room than a list has stops the
// search with statemachine::CapacityError, naming the list.
inline constexpr int kMaxSearchDepth = 8;
inline constexpr int kMaxSearchModules = 8;

struct SearchOptions {
  int depth = 4;
  spec::Semantics semantics = spec::Semantics::Upstream;
  AlphabetOptions alphabet;
  spec::InvariantSet checks;  // empty: all
  int threads = 1;
  std::uint64_t max_states = 0;  // 0: no limit; else stop cleanly past this many distinct states
  // Canonical ids: states that differ only in how capture, node and graph ids were numbered
  // (and in entries of ids nothing refers to any more) are one state. Off: the raw encoding.
  bool canonical_ids = true;
  std::uint64_t max_memory = 0;  // 0: no limit; else stop cleanly before the stored states (fingerprint
                                 // table and tree) need more bytes than this
  // Table coverage: count, per row of the transition table, the transitions that took it
  // (SearchResult::row_transitions).
  bool coverage = false;
  // Snapshots (snapshot.hpp): non-empty, the search's state is written to this directory at each
  // completed layer but the last; with `resume`, the search continues from the directory's last
  // complete layer instead of starting at the root, and ends with the uninterrupted result.
  std::string snapshot_dir;
  bool resume = false;
  // Not null: a request to stop (set by a signal handler, explorer/interrupt_signals.hpp). One
  // rank looks at it before each parent; several agree in the round where one of them saw it
  // (rank_rounds.cpp). The search then ends as a budget ends it (StopReason::Interrupted): the
  // layer being expanded counts as far as it was merged, and a snapshot of the last complete
  // layer stays in snapshot_dir for --resume.
  const std::atomic<bool>* interrupt = nullptr;
  // Not empty (`explorer --programs`, program_list.hpp): called on rank 0, as each layer
  // completes, with the path of every state of the layer that has no block open (a complete
  // program, closing braces included), in discovery-key order; so every distinct top-level
  // state but the empty program's, in the order the one-process search first reaches them, for
  // any threads and ranks. A layer an interrupt stops is not listed. search() refuses it with a
  // budget or a snapshot: a list cut short by one, or resumed after layers it did not list,
  // would look complete.
  std::function<void(int depth, const SearchPath& path)> programs;
};

enum class StopReason { None, MaxStates, MaxMemory, Interrupted };

struct Counterexample {
  spec::Invariant invariant = spec::Invariant::I1;
  spec::Program program;  // well formed: open blocks closed
  int length = 0;         // statements, closing braces not counted
  std::string reason;
};

// The first program of a search to take a table row (SearchOptions::coverage).
struct RowWitness {
  spec::Program program;  // well formed: open blocks closed
  int length = 0;         // statements, closing braces not counted; 0: the row was never taken
};

struct LayerStats {
  int depth = 0;
  std::uint64_t frontier = 0;     // states first reached with `depth` statements (closes are free)
  std::uint64_t distinct = 0;     // states stored, of depth <= `depth`
  std::uint64_t transitions = 0;  // statements executed to reach this layer, closes included
};

struct SearchResult {
  std::vector<Counterexample> counterexamples;               // by invariant
  std::map<spec::Invariant, std::uint64_t> violating_states;  // distinct states reached by a violating step or ending in one
  std::vector<LayerStats> layers;
  std::uint64_t distinct = 0;
  std::uint64_t transitions = 0;
  bool complete = true;  // false: stopped by max_states, max_memory or an interrupt
  StopReason stop_reason = StopReason::None;
  int depth_completed = 0;
  double seconds = 0;
  std::uint64_t peak_memory_bytes = 0;
  std::uint64_t stored_bytes = 0;  // fingerprint tables and tree, beyond the frontier
  double collision_probability = 0;  // of the 64-bit fingerprints, for `distinct` states
  std::vector<std::string> carried;  // what a state carries for the invariants checked (carried_state)
  // With SearchOptions::coverage, per row of the table (Machine::rows() order): how many of the
  // `transitions` took it at least once, in the program's run (the I8 reference's rows are not
  // counted), the program end judged after a top-level statement included. Empty otherwise.
  std::vector<std::uint64_t> row_transitions;
  // With coverage, per row: the program of the first transition that took it, a shortest one.
  std::vector<RowWitness> row_witnesses;
  // The processes of the search, and what they measured: each one's peak resident memory
  // (peak_memory_bytes is the largest) and the bytes the ranks sent each other.
  int ranks = 1;
  std::vector<std::uint64_t> peak_memory_per_rank;
  std::uint64_t exchanged_bytes = 0;
  // With several ranks and StopReason::MaxMemory: the rank whose share of --max-memory (the
  // budget divided by the ranks) ran out, and that share.
  int memory_stop_rank = -1;
  std::uint64_t memory_share = 0;
  int resumed_from_layer = -1;  // a resumed search: the snapshot's layer; -1 otherwise
};

using ProgressCallback = std::function<void(const LayerStats&, double seconds)>;

class Ranks;

// The search in this process alone.
SearchResult search(const SearchOptions& options, const ProgressCallback& progress = {});
// This rank's part of a search over `ranks` (every rank calls it with the same options); every
// rank returns the whole result. `progress` is called on rank 0 only: first when the search
// starts (with layer 0, or the layer a resumed search starts from), then after each layer.
SearchResult search(const SearchOptions& options, Ranks& ranks, const ProgressCallback& progress = {});

}  // namespace fp8sm::explorer
