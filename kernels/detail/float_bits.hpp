// float32 <-> its IEEE-754 bit pattern (C++17 has no std::bit_cast). Internal to kernels/.
#pragma once

#include <cstdint>
#include <cstring>

namespace fp8sm::kernels::detail {

inline std::uint32_t bits_of(float value) {
  std::uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

inline float float_of(std::uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

constexpr std::uint32_t kSignBit = 0x80000000u;
constexpr std::uint32_t kInfinityBits = 0x7F800000u;
constexpr std::uint32_t kQuietNanBits = 0x7FC00000u;

}  // namespace fp8sm::kernels::detail
