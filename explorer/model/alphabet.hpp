// The statements the exhaustive search may append to a program: the whole scenario language
// over a pool of module names and one tape, in a fixed order (determinism: a counterexample is
// a list of choices, replayed in this order).
#pragma once

#include <vector>

#include "explorer/model/model_state.hpp"
#include "spec/scenario.hpp"

namespace fp8sm::explorer {

// What a program may hold at any moment, whatever its length (docs/explorer.md "Fixpoint"):
// a statement that would take a state past one of these is not taken. 0: no bound.
struct ResourceBounds {
  int open_blocks = 0;  // blocks open at once: autocast, checkpoint, no_grad, try
  // Autograd nodes held by the step's graph and the saved tapes, not yet freed; and the
  // statements each checkpoint holds to replay (its body), at most as many: a reentrant
  // checkpoint's body runs without grad, so its modules are nodes only when it is recomputed.
  int live_nodes = 0;
  bool any() const { return open_blocks != 0 || live_nodes != 0; }
};

struct AlphabetOptions {
  int modules = 2;        // linear L0 .. L{modules-1}
  int tapes = 1;          // save / backward of tapes A, B, ...
  bool symmetry = true;   // module names in order of first use only (L1 before L0 is skipped)
  bool data = false;      // `data` too (--data-inputs): off, the search is the one of the language before it
  ResourceBounds bounds;  // the opening statements stop at bounds.open_blocks; live nodes: model/resource_bounds.hpp
};

// Every statement that keeps the program well formed after `state`, in alphabet order:
// opening statements (none once options.bounds.open_blocks are open), linear, raise,
// recompute_uncaptured, save, backward, data, step. Closing a block is not among them: it is
// free (see close_statement).
void next_statements(const ProgramFacts& facts, const AlphabetOptions& options, std::vector<spec::Statement>& out);

spec::Statement close_statement();

// The names the statements use: L0.., A..
spec::Program program_of(const std::vector<spec::Statement>& statements, const AlphabetOptions& options);

}  // namespace fp8sm::explorer
