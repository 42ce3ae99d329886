// Programs derived from a program.
#pragma once

#include <vector>

#include "spec/scenario.hpp"

namespace fp8sm::spec {

// The same program with every checkpoint replaced by its body and every
// recompute_uncaptured removed: the reference of invariant I8 (checkpoint transparency).
Program without_checkpoints(const Program& program);

// Whether the statement behaves differently by design when a recompute runs it: raise original
// or raise recompute inside a checkpoint block, or recompute_uncaptured anywhere. A program
// with one is not the same program as its reference, and I8 does not apply from there on.
bool recompute_specific(Op op, bool inside_checkpoint);

// Per step of the program: whether some statement up to the step's end is recompute-specific.
std::vector<bool> recompute_specific_steps(const Program& program);

}  // namespace fp8sm::spec
