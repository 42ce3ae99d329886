// The autograd tape as the interpreter models it (docs/scenarios.md "Graph"): nodes in
// recording order; backward visits them in reverse.
#pragma once

#include <cstdint>
#include <vector>

#include "spec/events.hpp"
#include "spec/scenario.hpp"
#include "statemachine/observer.hpp"

namespace fp8sm::statemachine {

// A checkpoint's body: the statements [begin, end) of the interpreter's statement log (every
// statement fed to it, in order). A slice, not a copy, so that nested checkpoints cost no
// more than the statements they hold.
struct Body {
  std::uint32_t begin = 0;
  std::uint32_t end = 0;
};

// A reentrant checkpoint's node: its recompute runs `body` at the node's turn in backward.
struct ReentrantRecord {
  Body body;
  CaptureId capture = 0;
  bool fp8 = false;  // ctx_fp8: fp8_enabled read after the original forward
};

// A non-reentrant checkpoint (TE's _CheckpointFrame with its saved-tensor hooks, spec §3.5).
// Its nodes are those recorded while it is the innermost non-reentrant checkpoint open; each
// saves one tensor through the frame's hook, numbered in recording order (its slot). The first
// unpack of a slot while `recomputed` is empty recomputes the body, whose own nodes save again
// into `recomputed`; each unpack then takes its slot (TE leaves None behind).
struct NonReentrantFrame {
  Body body;  // set when the checkpoint block closes
  CaptureId capture = 0;
  bool fp8 = false;     // fp8_enabled read before the body
  bool closed = false;  // its block has closed
  int live_nodes = 0;   // its own nodes, not yet dropped
  std::uint32_t slots = 0;       // frame.count: slots numbered by the original forward
  std::vector<bool> recomputed;  // frame.recomputed: per slot the recompute saved, true once taken
};

struct Node {
  enum class Kind : std::uint8_t { Module, Checkpoint };
  Kind kind = Kind::Module;
  NodeId id = 0;
  spec::ModuleId module = 0;  // Module
  bool fp8 = false;           // Module: its meta is FP8 (m.fp8 when recorded)
  bool owner = false;         // Module: the saved reduce_and_update_bwd_fp8_tensors flag
  bool backward_ran = false;  // Module: its backward completed once (a retained graph keeps the node)
  bool freed = false;         // its backward completed in a pass without retain: torch released
                              // what it saved (and TE's Linear dropped its backward objects)
  int reentrant = -1;         // Checkpoint: index of its ReentrantRecord
  int frame = -1;             // the non-reentrant frame whose hook packed what it saved, or -1
  std::uint32_t slot = 0;     // its slot in that frame
};

struct Graph {
  std::vector<Node> nodes;
  std::uint32_t generation = 0;  // tells graphs apart after `save` replaced the current one
  bool freed = false;            // backpropagated without retain (its nodes are released)
  bool live = true;              // false for a non-reentrant recompute's graph
};

}  // namespace fp8sm::statemachine
