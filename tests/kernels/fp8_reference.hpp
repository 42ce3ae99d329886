// Expectations for the FP8 tests, derived from the format definitions alone and sharing no code
// with kernels/fp8.cpp: decoding is the textbook formula on the bit fields, evaluated in double
// with std::ldexp; encoding searches the decoded table for the nearest value.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/fp8.hpp"

namespace fp8sm::kernels::fp8_reference {

struct FormatDefinition {
  int exponent_bits;
  int mantissa_bits;
  int bias;
  bool ieee_specials;  // E5M2: all-ones exponent is inf (mantissa 0) or NaN; E4M3: only S.1111.111
};

inline FormatDefinition definition(Format format) {
  return format == Format::E4M3 ? FormatDefinition{4, 3, 7, false}
                                : FormatDefinition{5, 2, 15, true};
}

// (-1)^s * 2^(e - bias) * (1 + m / 2^M) for e > 0, (-1)^s * 2^(1 - bias) * (m / 2^M) for e = 0.
inline double reference_decode(std::uint8_t code, Format format) {
  const FormatDefinition d = definition(format);
  const int sign = code >> 7;
  const int exponent = (code >> d.mantissa_bits) & ((1 << d.exponent_bits) - 1);
  const int mantissa = code & ((1 << d.mantissa_bits) - 1);
  const int all_ones = (1 << d.exponent_bits) - 1;
  double magnitude;
  if (d.ieee_specials && exponent == all_ones) {
    magnitude = mantissa == 0 ? std::numeric_limits<double>::infinity()
                              : std::numeric_limits<double>::quiet_NaN();
  } else if (!d.ieee_specials && exponent == all_ones && mantissa == (1 << d.mantissa_bits) - 1) {
    magnitude = std::numeric_limits<double>::quiet_NaN();
  } else if (exponent == 0) {
    magnitude = std::ldexp(static_cast<double>(mantissa), 1 - d.bias - d.mantissa_bits);
  } else {
    magnitude = std::ldexp(static_cast<double>((1 << d.mantissa_bits) + mantissa),
                           exponent - d.bias - d.mantissa_bits);
  }
  return sign != 0 ? -magnitude : magnitude;
}

// The non-negative finite values of a format with their codes, in increasing value order.
inline std::vector<std::pair<double, std::uint8_t>> list_positive_finite_values(Format format) {
  std::vector<std::pair<double, std::uint8_t>> values;
  for (int code = 0; code < 0x80; ++code) {
    const double value = reference_decode(static_cast<std::uint8_t>(code), format);
    if (std::isfinite(value)) values.emplace_back(value, static_cast<std::uint8_t>(code));
  }
  std::sort(values.begin(), values.end());
  return values;
}

inline const std::vector<std::pair<double, std::uint8_t>>& positive_finite_values(Format format) {
  static const auto e4m3 = list_positive_finite_values(Format::E4M3);
  static const auto e5m2 = list_positive_finite_values(Format::E5M2);
  return format == Format::E4M3 ? e4m3 : e5m2;
}

// Nearest representable value, ties to the even code (even last mantissa bit), beyond the
// largest finite value (and for infinity) the largest, sign kept; NaN -> S.1111111.
// Every comparison is exact: the midpoint of two FP8 values is exact in double.
inline std::uint8_t reference_encode(double value, Format format) {
  const std::uint8_t sign = std::signbit(value) ? 0x80 : 0x00;
  if (std::isnan(value)) return static_cast<std::uint8_t>(sign | 0x7F);
  const double magnitude = std::fabs(value);
  const auto& values = positive_finite_values(format);
  if (magnitude >= values.back().first) {
    return static_cast<std::uint8_t>(sign | values.back().second);
  }
  std::size_t above = 1;
  while (values[above].first <= magnitude) ++above;
  const auto& lo = values[above - 1];
  const auto& hi = values[above];
  const double midpoint = (lo.first + hi.first) / 2;
  std::uint8_t code;
  if (magnitude < midpoint) {
    code = lo.second;
  } else if (magnitude > midpoint) {
    code = hi.second;
  } else {
    code = (lo.second & 1) == 0 ? lo.second : hi.second;
  }
  return static_cast<std::uint8_t>(sign | code);
}

// Names the instances of a test parameterized over Format: .../E4M3, .../E5M2.
struct FormatName {
  std::string operator()(const ::testing::TestParamInfo<Format>& param_info) const {
    return format_name(param_info.param);
  }
};

}  // namespace fp8sm::kernels::fp8_reference

namespace fp8sm::kernels {
// How GoogleTest prints a Format parameter (found by argument-dependent lookup).
inline void PrintTo(Format format, std::ostream* out) { *out << format_name(format); }
}  // namespace fp8sm::kernels
