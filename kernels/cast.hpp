// Quantizing casts (spec §6, Cast): q = fp8(x * scale), amax := max(amax, max|x|), and the
// scale_inv that travels with the FP8 tensor to dequantize it in the GEMM.
//
// Every element: the product x * scale is rounded to float32 first (the GPU computes it in
// float32 too), then converted by to_fp8 (nearest-even, saturating, NaN kept). The amax is of
// the input x, before scaling, folded with amax_fold (NaN wins). Buffers are plain arrays of
// `count` elements that must not overlap; null pointers with count > 0 throw
// std::invalid_argument before anything is written.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/bf16.hpp"
#include "kernels/fp8.hpp"

namespace fp8sm::kernels {

// 1 / scale, correctly rounded (IEEE float32 division). Scale 0 gives +inf, as on the GPU.
float scale_inverse(float scale);

// output[i] = to_fp8(input[i] * scale); returns scale_inverse(scale).
float cast_to_fp8(const float* input, std::size_t count, float scale, Format format,
                  std::uint8_t* output, float& amax);
float cast_to_fp8(const Bf16* input, std::size_t count, float scale, Format format,
                  std::uint8_t* output, float& amax);

// `input` is rows x cols, row-major. Writes the same codes twice: `output` rows x cols and
// `output_t` cols x rows (output_t[c * rows + r] == output[r * cols + c]), both row-major, as
// TE's cast-transpose does for a GEMM operand needed in both layouts. amax as cast_to_fp8.
float cast_transpose_to_fp8(const float* input, std::size_t rows, std::size_t cols, float scale,
                            Format format, std::uint8_t* output, std::uint8_t* output_t,
                            float& amax);
float cast_transpose_to_fp8(const Bf16* input, std::size_t rows, std::size_t cols, float scale,
                            Format format, std::uint8_t* output, std::uint8_t* output_t,
                            float& amax);

}  // namespace fp8sm::kernels
