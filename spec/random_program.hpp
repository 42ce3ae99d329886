// Random well-formed programs of the scenario language, for the runtime's property tests and
// for `explorer random` (the corpus the TE conformance harness runs on both sides).
#pragma once

#include <cstdint>
#include <vector>

#include "spec/scenario.hpp"

namespace fp8sm::spec {

struct ProgramShape {
  int modules = 3;                    // module names L0..
  int tapes = 2;                      // tape names A, B, ..
  bool recompute_uncaptured = true;   // the runtime has no such operation; the model and TE do
};

// A well-formed program from a list of choices: each choice picks one of the statements the
// language allows at that point (closing the innermost block among them), and the blocks still
// open at the end are closed. Checkpoints of both kinds nest any way; `save` and `backward
// [TAPE] [retain]` stand outside checkpoints (the parser's rule), a tape's backward after its
// save; `step` outside every block. Shrinking the choices shrinks the program.
Program program_from_choices(const std::vector<int>& choices, const ProgramShape& shape);

// The program number `index` of the stream `seed`: 1 to `max_choices` choices, each drawn
// from a generator of its own (seed, index), so that one program is regenerated alone and the
// stream is the same bytes on every platform.
Program random_program(std::uint64_t seed, std::uint64_t index, int max_choices, const ProgramShape& shape);

}  // namespace fp8sm::spec
