// What one autograd node of the runtime keeps for its backward, and how it computes it. The
// tape itself (its order, its checkpoints, what backward visits) is the driver's
// (driver/tape.hpp): a node's function is the runtime's payload on it, and the node's place in
// the graph (the tensors it read and wrote) is here.
#pragma once

#include <string>
#include <vector>

#include "runtime/tensor.hpp"

namespace fp8sm::runtime {

class NodeFunction {
 public:
  virtual ~NodeFunction() = default;
  // The gradients of the node's inputs, one per input in `inputs` order, from the gradient of
  // its output.
  virtual std::vector<Matrix> backward(const Matrix& grad_output) = 0;
  // A non-reentrant checkpoint's hook discards what a node saves in its forward; its
  // recompute records twins, whose saved tensors the originals take at their unpack (never
  // their place in the graph: `inputs` and `output` stay the original's).
  virtual void drop_saved() = 0;
  virtual void take_saved(NodeFunction& twin) = 0;
  // Whether `twin` (recorded by a recompute at this node's slot) saved what this node needs:
  // the same kind of node (and, for a module, the same module).
  virtual bool is_twin(const NodeFunction& twin) const = 0;
  // Whether its forward saves tensors for its backward (torch's save_for_backward): a node
  // that saves none (a sum) has no slot in a non-reentrant checkpoint's frame, and visiting it
  // in backward recomputes nothing.
  virtual bool saves_tensors() const { return true; }
  // Throws (MisuseError or std::invalid_argument, naming `what`) if the node's backward could
  // not run: a parameter or its gradient the program replaced with another shape since the
  // forward. Called for every node before a backward pass fires anything.
  virtual void require_ready(const std::string& /*what*/) const {}

  // Set by the context when it records the node: the tensors it read, with the shapes they had
  // then, and the one it wrote.
  std::vector<TensorId> inputs;
  std::vector<Shape> input_shapes;
  TensorId output = 0;
  Shape output_shape;
};

}  // namespace fp8sm::runtime
