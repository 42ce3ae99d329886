// What one autograd node of the runtime keeps for its backward, and how it computes it. The
// tape itself (its order, its checkpoints, what backward visits) is the driver's
// (driver/tape.hpp): a node's function is the runtime's payload on it.
#pragma once

#include "runtime/matrix.hpp"

namespace fp8sm::runtime {

class NodeFunction {
 public:
  virtual ~NodeFunction() = default;
  // The gradient of the node's input from the gradient of its output.
  virtual Matrix backward(const Matrix& grad_output) = 0;
  // A non-reentrant checkpoint's hook discards what a node saves in its forward; its
  // recompute records twins, whose saved tensors the originals take at their unpack.
  virtual void drop_saved() = 0;
  virtual void take_saved(NodeFunction& twin) = 0;
  // Whether `twin` (recorded by a recompute at this node's slot) saved what this node needs:
  // the same kind of node (and, for a module, the same module).
  virtual bool is_twin(const NodeFunction& twin) const = 0;
};

}  // namespace fp8sm::runtime
