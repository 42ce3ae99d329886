// The autograd tape as the interpreter models it (docs/scenarios.md "Graph"): nodes in
// recording order; backward visits them in reverse.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "spec/events.hpp"
#include "spec/scenario.hpp"
#include "statemachine/observer.hpp"

namespace fp8sm::statemachine {

using Body = std::shared_ptr<const std::vector<spec::Statement>>;

// A reentrant checkpoint's node: its recompute runs `body` at the node's turn in backward.
struct ReentrantRecord {
  Body body;
  CaptureId capture = 0;
  bool fp8 = false;  // ctx_fp8: fp8_enabled read after the original forward
};

// A non-reentrant checkpoint: its nodes are the modules recorded inside it; the first of
// them that backward visits (the last recorded) triggers its recompute, once.
struct NonReentrantFrame {
  Body body;  // set when the checkpoint block closes
  CaptureId capture = 0;
  bool fp8 = false;  // fp8_enabled read before the body
  bool recomputed = false;
  int parent = -1;  // enclosing non-reentrant frame, recomputed first
  bool closed = false;     // its block has closed
  int live_nodes = 0;      // nodes recorded in it or in its nested frames, not yet dropped
};

struct Node {
  enum class Kind : std::uint8_t { Module, Checkpoint };
  Kind kind = Kind::Module;
  NodeId id = 0;
  spec::ModuleId module = 0;  // Module
  bool fp8 = false;           // Module: its meta is FP8 (m.fp8 when recorded)
  bool owner = false;         // Module: the saved reduce_and_update_bwd_fp8_tensors flag
  int reentrant = -1;         // Checkpoint: index of its ReentrantRecord
  int frame = -1;             // innermost non-reentrant frame it was recorded in, or -1
};

struct Graph {
  std::vector<Node> nodes;
  std::uint32_t generation = 0;  // tells graphs apart after `save` replaced the current one
  bool freed = false;            // backpropagated without retain
  bool live = true;              // false for a non-reentrant recompute's graph
};

}  // namespace fp8sm::statemachine
