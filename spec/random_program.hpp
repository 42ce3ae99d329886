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
  bool data = false;                  // `data` too (the runtime's tensors carry no requires_grad)
  // Toward training steps whose backward runs (`explorer random`): a training step runs inside
  // an `autocast on` and ends with its blocks closed and a `backward` (in random_program 3
  // steps in 4, in program_from_choices every step), what raises in a forward outside a `try`
  // is 16 times rarer, modules are more likely. Without it, 2 % of `explorer random`'s
  // programs made a backward update on TE and 2 in 3 ended in an uncaught exception; with it,
  // 44 % and 1 in 4.
  bool backward_bias = false;
};

// A well-formed program from a list of choices: each choice picks one of the statements the
// language allows at that point (closing the innermost block among them), and the blocks still
// open at the end are closed. Checkpoints of both kinds nest any way; `save`, `backward
// [TAPE] [retain]` and `data` stand outside checkpoints (the parser's rule), a tape's backward
// after its save; `step` outside every block. Shrinking the choices shrinks the program.
Program program_from_choices(const std::vector<int>& choices, const ProgramShape& shape);

// The program number `index` of the stream `seed`: 1 to `max_choices` choices (and, with
// shape.backward_bias, which steps are training steps), drawn from a generator of its own
// (seed, index), so that one program is regenerated alone and the stream is the same bytes on
// every platform.
Program random_program(std::uint64_t seed, std::uint64_t index, int max_choices, const ProgramShape& shape);

}  // namespace fp8sm::spec
