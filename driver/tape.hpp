// The autograd tape and the checkpoint ledger, as the driver keeps them for the scenario
// interpreter and the runtime alike (docs/scenarios.md "Graph"): nodes in recording order
// (backward visits them in reverse), a reentrant checkpoint's record, a non-reentrant
// checkpoint's frame. What a host attaches to them (a node's backward function and saved
// tensors, a checkpoint's body) is its `Traits`' payload; the driver only moves it around.
#pragma once

#include <cstdint>
#include <vector>

#include "spec/events.hpp"

namespace fp8sm::driver {

using spec::CaptureId;
using spec::ModuleId;
using NodeId = std::uint32_t;

template <class Traits>
struct Node {
  enum class Kind : std::uint8_t { Module, Function, Checkpoint };
  Kind kind = Kind::Module;
  NodeId id = 0;
  ModuleId module = 0;        // Module
  bool fp8 = false;           // Module: its meta is FP8 (m.fp8 when recorded)
  bool owner = false;         // Module: the saved reduce_and_update_bwd_fp8_tensors flag
  bool backward_ran = false;  // Module: its backward completed once (a retained graph keeps the node)
  bool freed = false;         // its backward completed in a pass without retain: torch released
                              // what it saved (and TE's Linear dropped its backward objects)
  int reentrant = -1;         // Checkpoint: index of its ReentrantRecord
  int frame = -1;             // the non-reentrant frame whose hook packed what it saved, or -1
  std::uint32_t slot = 0;     // its slot in that frame
  typename Traits::NodePayload payload{};
};

template <class Traits>
struct Graph {
  std::vector<Node<Traits>> nodes;
  std::uint32_t generation = 0;  // tells graphs apart after `save` replaced the current one
  bool freed = false;            // backpropagated without retain (its nodes are released)
  bool live = true;              // false for a non-reentrant recompute's graph
};

// A reentrant checkpoint's node: its recompute runs `body` at the node's turn in backward.
template <class Traits>
struct ReentrantRecord {
  typename Traits::Body body{};
  CaptureId capture = 0;
  bool fp8 = false;  // ctx_fp8: fp8_enabled read after the original forward
};

// A non-reentrant checkpoint (TE's _CheckpointFrame with its saved-tensor hooks, spec §3.5).
// Its nodes are those recorded while it is the innermost non-reentrant checkpoint open; each
// saves through the frame's hook, numbered in recording order (its slot). The first unpack of
// a slot while `recomputed` is empty recomputes the body, whose own nodes save again into
// `recomputed`; each unpack then takes its slot (TE leaves None behind).
template <class Traits>
struct NonReentrantFrame {
  struct Slot {
    bool taken = false;
    typename Traits::NodePayload twin{};  // what the recompute's node saved
  };
  typename Traits::Body body{};  // set when the checkpoint's forward ends
  CaptureId capture = 0;
  bool fp8 = false;     // fp8_enabled read before the body
  bool closed = false;  // its forward has ended
  int live_nodes = 0;   // its own nodes, not yet dropped
  std::uint32_t slots = 0;   // frame.count: slots numbered by the original forward
  std::vector<Slot> recomputed;  // frame.recomputed
};

}  // namespace fp8sm::driver
