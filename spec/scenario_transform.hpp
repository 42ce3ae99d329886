// Programs derived from a program.
#pragma once

#include "spec/scenario.hpp"

namespace fp8sm::spec {

// The same program with every checkpoint replaced by its body and every
// recompute_uncaptured removed: the reference of invariant I8 (checkpoint transparency).
Program without_checkpoints(const Program& program);

// Whether the program behaves differently by design when it recomputes (raise recompute,
// recompute_uncaptured): then its reference is not the same program, and I8 does not apply.
bool behaves_differently_in_recompute(const Program& program);

}  // namespace fp8sm::spec
