// The functions of a network between its modules, each recorded on the graph (context.hpp) when
// grad is on: activations, the residual sum, causal attention, the loss. They compute in fp32 on
// the context's backend (kernels/layer_math.hpp on the CPU, layers.cu on a device).
// Bad shapes and targets throw std::invalid_argument before anything is recorded.
#pragma once

#include <cstddef>
#include <vector>

#include "runtime/context.hpp"

namespace fp8sm::runtime {

// max(x, 0), element-wise; the second form on the chain (context.hpp).
Tensor relu(Context& context, const Tensor& x);
Matrix relu(Context& context, const Matrix& x);

// GELU, exact (torch.nn.functional.gelu's default), element-wise.
Tensor gelu(Context& context, const Tensor& x);

// a + b, element-wise (a residual connection: both receive the sum's gradient).
Tensor add(Context& context, const Tensor& a, const Tensor& b);

// Causal single-head self-attention: `qkv` holds, per row, a position's query, key and value
// (3·width columns), rows grouped into sequences of `sequence_length` positions; the output is
// each position's attention over the positions up to it (width columns).
Tensor causal_attention(Context& context, const Tensor& qkv, std::size_t sequence_length);

// Softmax cross-entropy: the mean over the rows of `logits` of -log softmax(row)[target], one
// target class a row, -1 for a row not counted (torch's ignore_index); a 1×1 tensor (backward it
// with a 1×1 gradient, 1 for the loss itself).
Tensor cross_entropy(Context& context, const Tensor& logits, const std::vector<int>& targets);

}  // namespace fp8sm::runtime
