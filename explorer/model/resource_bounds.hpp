// What a state holds of the resources a fixpoint search bounds (alphabet.hpp's ResourceBounds):
// the blocks open, and the autograd nodes live in the step's graph and the saved tapes. A
// statement whose chain (the statement and the closing braces after it) reaches a state past a
// bound is not taken: the bounded programs are those whose every state is within the bounds.
#pragma once

#include "explorer/model/alphabet.hpp"
#include "explorer/model/model_state.hpp"

namespace fp8sm::explorer {

// The largest bounds a search takes: what the flat state has room for (the interpreter's open
// scopes, one graph's nodes). The command line's help text names these numbers (command_line.cpp).
inline constexpr int kMaxOpenBlocksBound = static_cast<int>(interpreter::capacity::Scopes::kCapacity);
inline constexpr int kMaxLiveNodesBound = static_cast<int>(driver::capacity::GraphNodes::kCapacity);

// Nodes of the program's step graph and saved tapes that a later backward could still visit:
// those of graphs not freed by a backward without retain, each not freed itself.
int live_nodes(const ModelState& state);

// The statements of the longest body a checkpoint holds for its recompute: a reentrant
// record's, a non-reentrant frame's, or an open checkpoint's so far.
int longest_held_body(const ModelState& state);

bool within_bounds(const ModelState& state, const ResourceBounds& bounds);

}  // namespace fp8sm::explorer
