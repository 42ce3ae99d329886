// bfloat16 as the upper half of a float32: 1 sign, 8 exponent bits, 7 mantissa bits. Only the
// widening conversion is needed (cast inputs may be bf16); it is exact.
#pragma once

#include <cstdint>

#include "kernels/detail/float_bits.hpp"

namespace fp8sm::kernels {

// A distinct type so that a bf16 buffer is not mistaken for 16-bit integers.
struct Bf16 {
  std::uint16_t bits;
};

inline float to_float(Bf16 value) {
  return detail::float_of(static_cast<std::uint32_t>(value.bits) << 16);
}

}  // namespace fp8sm::kernels
