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

#include "explorer/model/model_settings.hpp"
#include "explorer/search/search_types.hpp"

namespace fp8sm::explorer {

// The flat state's capacities (statemachine/storage.hpp and the lists' declarations) are
// sized for programs of up to this many statements over up to this many modules; search()
// refuses more. A program within them that still needs more room than a list has stops the
// search with statemachine::CapacityError, naming the list.
inline constexpr int kMaxSearchDepth = 8;
// A search to the fixpoint (EngineOptions::until_fixpoint) needs no depth, but its paths are
// at most kMaxPathCodes codes (search_path.hpp): it gives up past this many layers.
inline constexpr int kMaxFixpointDepth = kMaxPathCodes / 2;  // 48
inline constexpr int kMaxSearchModules = 8;
// Worker threads of one process: the command line and the Python package refuse more.
inline constexpr int kMaxSearchThreads = 256;

// A search of the scenario language's programs: the model's settings (model_settings.hpp:
// semantics, alphabet, checks, canonical ids) and the engine's (search_types.hpp: depth,
// threads, budgets, snapshots, coverage, the program list), one struct for the callers that set
// both.
struct SearchOptions : ModelSettings, EngineOptions {};

class Ranks;

// The search in this process alone.
SearchResult search(const SearchOptions& options, const ProgressCallback& progress = {});
// This rank's part of a search over `ranks` (every rank calls it with the same options): the
// engine (engine.hpp) over program_model.hpp's model. Every rank returns the whole result.
// `progress` is called on rank 0 only: first when the search starts (with layer 0, or the layer
// a resumed search starts from), then after each layer.
SearchResult search(const SearchOptions& options, Ranks& ranks, const ProgressCallback& progress = {});

}  // namespace fp8sm::explorer
