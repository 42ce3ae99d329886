// A value of the autograd graph: a matrix and the id that names it in the graph, as the output
// of the node that computed it or as a leaf (an input, or an output computed without grad).
// Ops take tensors and return tensors; a node records the ids of the tensors it read and of
// the one it wrote, and backward accumulates each tensor's gradient from all its consumers.
#pragma once

#include <cstdint>

#include "runtime/matrix.hpp"

namespace fp8sm::runtime {

using TensorId = std::uint64_t;

struct Tensor {
  Matrix value;
  TensorId id = 0;  // 0: not made by a context (Context::input makes leaves)
};

}  // namespace fp8sm::runtime
