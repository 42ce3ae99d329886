// The statements the exhaustive search may append to a program: the whole scenario language
// over a pool of module names and one tape, in a fixed order (determinism: a counterexample is
// a list of choices, replayed in this order).
#pragma once

#include <vector>

#include "explorer/model/model_state.hpp"
#include "spec/scenario.hpp"

namespace fp8sm::explorer {

struct AlphabetOptions {
  int modules = 2;        // linear L0 .. L{modules-1}
  int tapes = 1;          // save / backward of tapes A, B, ...
  bool symmetry = true;   // module names in order of first use only (L1 before L0 is skipped)
  bool data = false;      // `data` too (--data-inputs): off, the search is the one of the language before it
};

// Every statement that keeps the program well formed after `state`, in alphabet order:
// opening statements, linear, raise, recompute_uncaptured, save, backward, data, step. Closing a
// block is not among them: it is free (see close_statement).
void next_statements(const ProgramFacts& facts, const AlphabetOptions& options, std::vector<spec::Statement>& out);

spec::Statement close_statement();

// The names the statements use: L0.., A..
spec::Program program_of(const std::vector<spec::Statement>& statements, const AlphabetOptions& options);

}  // namespace fp8sm::explorer
