// FP8 GEMM reference, in the "TN" layout TE uses with cuBLASLt: both operands K-contiguous, so
// a Linear layer's forward y = x W^T takes x (tokens x in) and W (out x in) as they are.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/fp8.hpp"

namespace fp8sm::kernels {

// One operand: `rows` x k codes, row-major (the k values of a row are adjacent), in `format`,
// with the scale_inv that its cast returned.
struct Fp8Operand {
  const std::uint8_t* data;
  std::size_t rows;
  Format format;
  float scale_inv;
};

// c (a.rows x b.rows, row-major) := A B^T dequantized:
//
//   acc = 0.0f; for p = 0, 1, ..., k-1:  acc = acc + from_fp8(A[i][p]) * from_fp8(B[j][p])
//   c[i * b.rows + j] = acc * (a.scale_inv * b.scale_inv)
//
// Each product of two FP8 values is exact in float32 (at most 8 significant bits, magnitudes
// between 2^-32 and 2^32), so the only roundings are the k float32 additions, in ascending p,
// then the dequantization factor and the final product: the scales are applied once to the
// sum, as cuBLASLt applies its A/B scale pointers, not to each element. A GPU version that sums
// in another order agrees within about k * 2^-24 * sum|products| * |factor| (see README).
// Any pair of formats is accepted (E5M2 x E4M3 for gradients). NaN codes propagate to their
// rows/columns. Null buffers with a non-empty shape throw std::invalid_argument.
void gemm_tn(const Fp8Operand& a, const Fp8Operand& b, std::size_t k, float* c);

}  // namespace fp8sm::kernels
