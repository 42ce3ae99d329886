// The search engine's own settings and what it returns: how deep, on how many threads, within
// which budgets, with which snapshots (EngineOptions), and the result of a search (SearchResult).
// What is searched, the model, is search_model.hpp's; the search of programs of the scenario
// language puts the two together in search.hpp.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "explorer/search/search_path.hpp"
#include "spec/invariants.hpp"
#include "spec/scenario.hpp"

namespace fp8sm::explorer {

struct EngineOptions {
  int depth = 4;
  int threads = 1;
  std::uint64_t max_states = 0;  // 0: no limit; else stop cleanly past this many distinct states
  std::uint64_t max_memory = 0;  // 0: no limit; else stop cleanly before the stored states (fingerprint
                                 // table and tree) need more bytes than this
  // Table coverage: count, per row of the model's table (SearchModel::table_rows), the
  // transitions that took it (SearchResult::row_transitions).
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
  // completes, with the path of every state of the layer that is at top level (for programs, no
  // block open: a complete program, closing braces included), in discovery-key order; so every
  // distinct top-level state but the initial one, in the order the one-process search first
  // reaches them, for any threads and ranks. A layer an interrupt stops is not listed. The
  // engine refuses it with a budget or a snapshot: a list cut short by one, or resumed after
  // layers it did not list, would look complete.
  std::function<void(int depth, const SearchPath& path)> programs;
  // How many of those states one message of a rank's list carries to rank 0 (rank_programs.cpp;
  // 56 bytes each, well below the 2 GiB an MPI message can count). A shorter message, possibly
  // empty, ends a rank's list. Smaller only in tests, so that a small search's lists take
  // several messages, or end on an empty one.
  std::size_t programs_per_message = std::size_t{1} << 16;
  // Search until a layer adds no state (a fixpoint: SearchResult::fixpoint), `depth` layers at
  // most. The model must then have finitely many states (its bounds, search_model.hpp).
  bool until_fixpoint = false;
};

// NoFixpoint: a search to the fixpoint (EngineOptions::until_fixpoint) explored its `depth`
// layers and the last still added states.
enum class StopReason { None, MaxStates, MaxMemory, Interrupted, NoFixpoint };

struct Counterexample {
  spec::Invariant invariant = spec::Invariant::I1;
  spec::Program program;  // well formed: open blocks closed
  int length = 0;         // statements, closing braces not counted
  std::string reason;
};

// The first program of a search to take a table row (EngineOptions::coverage).
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
  bool complete = true;  // false: stopped by max_states, max_memory, an interrupt, or no fixpoint by `depth`
  StopReason stop_reason = StopReason::None;
  int depth_completed = 0;
  // EngineOptions::until_fixpoint: the last layer added no state, so the states stored are every
  // state the model reaches, and the layer before it (depth_completed - 1) is the longest
  // shortest path to one of them.
  bool fixpoint = false;
  double seconds = 0;
  std::uint64_t peak_memory_bytes = 0;
  std::uint64_t stored_bytes = 0;  // fingerprint tables and tree, beyond the frontier
  double collision_probability = 0;  // of the seen-set's 80-bit fingerprints, for `distinct` states
  std::vector<std::string> carried;  // what a state carries for the invariants checked (carried_state)
  // With EngineOptions::coverage, per row of the table (Machine::rows() order): how many of the
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
  // A search to the fixpoint that found none (StopReason::NoFixpoint): what still grows, by the
  // model's analysis of the same programs within a budget (model/state_growth.hpp): the parts
  // of the state that took new values in its last layer, each with a program that gave it one.
  // Rank 0's result only: it alone reports, and the analysis is the same on every rank.
  struct StillGrowing {
    int depth = 0;             // the analysis' last layer
    std::uint64_t states = 0;  // the states it had stored then
    std::vector<std::string> parts;
    std::vector<std::string> examples;  // per part, one line
  };
  std::optional<StillGrowing> still_growing;
};

using ProgressCallback = std::function<void(const LayerStats&, double seconds)>;

}  // namespace fp8sm::explorer
