// FP8 -> float32 with the tensor's scale_inv (spec §6: scale_inv "used to dequantize").
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/fp8.hpp"

namespace fp8sm::kernels {

// output[i] = from_fp8(input[i]) * scale_inv: the decode is exact, the product is one float32
// rounding. NaN codes give NaN, E5M2 infinities give ±inf (or NaN when scale_inv is 0).
// Null buffers with count > 0 throw std::invalid_argument.
void dequantize(const std::uint8_t* input, std::size_t count, Format format, float scale_inv,
                float* output);

}  // namespace fp8sm::kernels
