// A value of the autograd graph: a matrix, the id that names it in the graph, and the context
// whose graph that is, as the output of the node that computed it or as a leaf (an input, or an
// output computed without grad). Ops take tensors and return tensors; a node records the ids of
// the tensors it read and of the one it wrote, and backward accumulates each tensor's gradient
// from all its consumers.
//
// Only a context makes tensors (Context::input, and every op): ids are numbered per context, so
// a tensor of one context handed to another would name a different tensor there. Every
// operation refuses a tensor that is not its context's (MisuseError), and one whose value is no
// longer the shape the graph recorded is refused at backward, before any event.
#pragma once

#include <cstdint>

#include "runtime/matrix.hpp"

namespace fp8sm::runtime {

using TensorId = std::uint64_t;
// A context's serial number, unique in the process (never reused, unlike its address).
using ContextSerial = std::uint64_t;

struct Tensor {
  Matrix value;
  TensorId id = 0;             // 0: not made by a context
  ContextSerial context = 0;   // the context whose graph `id` names
};

}  // namespace fp8sm::runtime
