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
  // A non-reentrant checkpoint's hook discards what a node saves in its forward; its
  // recompute records twins, whose saved tensors the originals take at their unpack.
  virtual void drop_saved() = 0;
  virtual void take_saved(NodeFunction& twin) = 0;
  // Whether `twin` (recorded by a recompute at this node's slot) saved what this node needs:
  // the same kind of node (and, for a module, the same module).
  virtual bool is_twin(const NodeFunction& twin) const = 0;
};

struct Frame;

struct TapeNode {
  enum class Kind { Module, Function, Checkpoint };
  Kind kind = Kind::Function;
  spec::ModuleId module = 0;    // Module
  bool owner = false;           // Module: the claim's reduce_and_update_bwd_fp8_tensors flag
  bool fp8 = false;             // Module: its casts were FP8
  bool backward_ran = false;    // Module: its backward completed (a retained graph keeps the node)
  spec::CaptureId capture = 0;  // Checkpoint (reentrant)
  std::shared_ptr<Frame> frame;  // the non-reentrant checkpoint whose hook packed what it saved
  std::uint32_t slot = 0;        // its slot there
  std::shared_ptr<NodeFunction> function;
};

struct Graph {
  std::vector<TapeNode> nodes;
  std::uint64_t generation = 0;  // tells graphs apart after backward replaced the current one
  bool freed = false;            // backpropagated without retain_graph
};

}  // namespace fp8sm::runtime
