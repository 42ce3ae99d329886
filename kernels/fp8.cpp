#include "kernels/fp8.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "kernels/detail/float_bits.hpp"

namespace fp8sm::kernels {
namespace {

using detail::bits_of;
using detail::float_of;

constexpr int kFloatMantissaBits = 23;
constexpr int kFloatBias = 127;

// What distinguishes the two formats. Codes below are magnitudes (sign bit cleared).
struct Layout {
  int mantissa_bits;
  int bias;
  std::uint32_t max_code;  // the largest finite value
  std::uint32_t nan_code;  // the NaN we produce
  bool has_infinity;       // E5M2: exponent all ones with mantissa 0 is infinity
};

Layout layout_of(Format format) {
  switch (format) {
    case Format::E4M3: return {3, 7, 0x7E, 0x7F, false};
    case Format::E5M2: return {2, 15, 0x7B, 0x7F, true};
  }
  throw std::invalid_argument(fmt::format("unknown FP8 format {}", static_cast<int>(format)));
}

// value / 2^shift rounded to nearest, ties to even. value < 2^31 and shift >= 1.
std::uint32_t shift_right_nearest_even(std::uint32_t value, int shift) {
  if (shift >= 32) return 0;  // value / 2^shift < 1/2
  const std::uint32_t kept = value >> shift;
  const std::uint32_t dropped = value & ((1u << shift) - 1u);
  const std::uint32_t half = 1u << (shift - 1);
  const bool round_up = dropped > half || (dropped == half && (kept & 1u) != 0);
  return round_up ? kept + 1u : kept;
}

}  // namespace

const char* format_name(Format format) {
  switch (format) {
    case Format::E4M3: return "E4M3";
    case Format::E5M2: return "E5M2";
  }
  return "unknown";
}

float fp8_max(Format format) {
  const Layout layout = layout_of(format);
  return from_fp8(static_cast<std::uint8_t>(layout.max_code), format);
}

std::uint8_t to_fp8(float value, Format format) {
  const Layout layout = layout_of(format);
  const std::uint32_t bits = bits_of(value);
  const auto sign = static_cast<std::uint8_t>((bits >> 24) & 0x80u);
  const std::uint32_t magnitude = bits & ~detail::kSignBit;
  if (magnitude > detail::kInfinityBits) return static_cast<std::uint8_t>(sign | layout.nan_code);

  const int mantissa_shift = kFloatMantissaBits - layout.mantissa_bits;
  // Biased float exponent of the FP8's smallest normal value 2^(1 - bias).
  const int min_normal_field = kFloatBias + 1 - layout.bias;
  const int exponent_field = static_cast<int>(magnitude >> kFloatMantissaBits);

  std::uint32_t code;
  if (exponent_field >= min_normal_field) {
    // Normal in the FP8 too: drop the extra mantissa bits of exponent|mantissa together, so a
    // carry out of the mantissa moves up the exponent, then rebias the exponent.
    code = shift_right_nearest_even(magnitude, mantissa_shift) -
           (static_cast<std::uint32_t>(kFloatBias - layout.bias) << layout.mantissa_bits);
  } else {
    // FP8 subnormal range: count units of the smallest subnormal 2^(1 - bias - mantissa_bits).
    // Float subnormals have no implicit bit and the exponent of field 1.
    const std::uint32_t fraction = magnitude & ((1u << kFloatMantissaBits) - 1u);
    const std::uint32_t significand =
        exponent_field == 0 ? fraction : fraction | (1u << kFloatMantissaBits);
    const int shift = mantissa_shift + min_normal_field - std::max(exponent_field, 1);
    code = shift_right_nearest_even(significand, shift);
  }
  // Saturation: everything that rounds beyond max (infinity included) becomes max.
  code = std::min(code, layout.max_code);
  return static_cast<std::uint8_t>(sign | code);
}

float from_fp8(std::uint8_t code, Format format) {
  const Layout layout = layout_of(format);
  const std::uint32_t sign = (static_cast<std::uint32_t>(code) & 0x80u) << 24;
  const std::uint32_t magnitude = code & 0x7Fu;
  const std::uint32_t exponent_field = magnitude >> layout.mantissa_bits;
  const std::uint32_t mantissa = magnitude & ((1u << layout.mantissa_bits) - 1u);
  const std::uint32_t all_ones_exponent = 0x7Fu >> layout.mantissa_bits;

  if (layout.has_infinity ? exponent_field == all_ones_exponent : magnitude == layout.nan_code) {
    const bool infinity = layout.has_infinity && mantissa == 0;
    return float_of(sign | (infinity ? detail::kInfinityBits : detail::kQuietNanBits));
  }
  if (exponent_field == 0) {
    // mantissa x 2^(1 - bias - mantissa_bits): a small integer times a power of two, exact.
    const float value = std::ldexp(static_cast<float>(mantissa),
                                   1 - layout.bias - layout.mantissa_bits);
    return float_of(sign | bits_of(value));
  }
  const std::uint32_t float_exponent =
      exponent_field + static_cast<std::uint32_t>(kFloatBias - layout.bias);
  return float_of(sign | (float_exponent << kFloatMantissaBits) |
                  (mantissa << (kFloatMantissaBits - layout.mantissa_bits)));
}

}  // namespace fp8sm::kernels
