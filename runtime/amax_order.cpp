#include "runtime/amax_order.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

namespace fp8sm::runtime {
namespace {

constexpr std::uint32_t kSignBit = 0x80000000u;
constexpr std::uint32_t kMagnitudeBits = 0x7FFFFFFFu;
constexpr std::uint32_t kInfinityBits = 0x7F800000u;
// -inf's key (0xFF800000 with the magnitude bits flipped: 0x807FFFFF), the smallest key of any
// float; the keys below it would decode to NaNs with the sign set, which no amax maps to.
constexpr std::int32_t kNegativeInfinityKey = -static_cast<std::int32_t>(kInfinityBits) - 1;

std::uint32_t bits_of(float value) {
  std::uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

float float_of(std::uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

// Two's complement both ways, spelled out: a uint32 -> int32 conversion of a value above
// INT32_MAX is implementation-defined before C++20.
std::int32_t as_signed(std::uint32_t bits) {
  return bits <= kMagnitudeBits ? static_cast<std::int32_t>(bits)
                                : -static_cast<std::int32_t>(~bits) - 1;
}

std::uint32_t as_unsigned(std::int32_t key) { return static_cast<std::uint32_t>(key); }

}  // namespace

std::int32_t amax_order_key(float amax) {
  std::uint32_t bits = bits_of(amax);
  const bool nan = (bits & kMagnitudeBits) > kInfinityBits;
  if (nan) bits &= kMagnitudeBits;
  // A negative float's pattern grows with its magnitude; flipping the magnitude bits makes the
  // larger magnitude the smaller key, and -0 the key -1, just below +0's 0.
  if ((bits & kSignBit) != 0) bits ^= kMagnitudeBits;
  return as_signed(bits);
}

float amax_from_order_key(std::int32_t key) {
  std::uint32_t bits = as_unsigned(key);
  if (key < 0) {
    if (key < kNegativeInfinityKey) {
      throw std::invalid_argument(
          fmt::format("amax_from_order_key: {} is no amax's key (it would be a NaN with the sign set)", key));
    }
    bits ^= kMagnitudeBits;
  }
  return float_of(bits);
}

float amax_order_max(float a, float b) {
  const std::int32_t larger = std::max(amax_order_key(a), amax_order_key(b));
  return amax_from_order_key(larger);  // a NaN with the sign set comes back without it
}

}  // namespace fp8sm::runtime
