// The runtime's explicit autograd tape: a chain of nodes, each turning the gradient of its
// output into the gradient of its input. Backward walks a graph's nodes in reverse.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "runtime/matrix.hpp"
#include "spec/events.hpp"

namespace fp8sm::runtime {

// What one node keeps for its backward, and how it computes it.
class NodeFunction {
 public:
  virtual ~NodeFunction() = default;
  virtual Matrix backward(const Matrix& grad_output) = 0;
  // A non-reentrant checkpoint frees what its nodes saved when its forward ends; its recompute
  // records twins of them, whose saved tensors the originals take before they run backward.
  virtual void drop_saved() = 0;
  virtual void take_saved(NodeFunction& twin) = 0;
};

struct TapeNode {
  enum class Kind { Module, Function, Checkpoint };
  Kind kind = Kind::Function;
  spec::ModuleId module = 0;  // Module
  bool owner = false;         // Module: the claim's reduce_and_update_bwd_fp8_tensors flag
  bool fp8 = false;           // Module: its casts were FP8
  spec::CaptureId capture = 0;  // Checkpoint (reentrant)
  int frame = -1;             // innermost non-reentrant checkpoint it was recorded in
  std::shared_ptr<NodeFunction> function;
};

struct Graph {
  std::vector<TapeNode> nodes;
  std::uint64_t generation = 0;  // tells graphs apart after backward replaced the current one
  bool freed = false; // backpropagated without retain_graph
};

}  // namespace fp8sm::runtime
