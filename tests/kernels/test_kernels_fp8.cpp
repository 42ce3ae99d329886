// FP8 E4M3/E5M2 conversion against the format definitions (fp8_reference.hpp).
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>

#include "fp8_reference.hpp"
#include "kernels/fp8.hpp"

namespace fp8sm::kernels {
namespace {

using fp8_reference::positive_finite_values;
using fp8_reference::reference_decode;
using fp8_reference::reference_encode;

std::uint32_t bits(float value) {
  std::uint32_t out;
  std::memcpy(&out, &value, sizeof out);
  return out;
}

float from_bits(std::uint32_t pattern) {
  float out;
  std::memcpy(&out, &pattern, sizeof out);
  return out;
}

class Fp8Format : public ::testing::TestWithParam<Format> {};

INSTANTIATE_TEST_SUITE_P(BothFormats, Fp8Format, ::testing::Values(Format::E4M3, Format::E5M2),
                         fp8_reference::FormatName());

TEST(Fp8Max, IsTheLargestFiniteValueOfEachFormat) {
  // E4M3 S.1111.110 = 2^(15-7) * 1.75; E5M2 S.11110.11 = 2^(30-15) * 1.75.
  EXPECT_EQ(fp8_max(Format::E4M3), 448.0f);
  EXPECT_EQ(fp8_max(Format::E5M2), 57344.0f);
  EXPECT_EQ(fp8_max(Format::E4M3), std::ldexp(1.75f, 8));
  EXPECT_EQ(fp8_max(Format::E5M2), std::ldexp(1.75f, 15));
}

TEST(Fp8FormatEnum, UnknownValueThrows) {
  const auto unknown = static_cast<Format>(9);
  EXPECT_THROW(to_fp8(1.0f, unknown), std::invalid_argument);
  EXPECT_THROW(from_fp8(0x38, unknown), std::invalid_argument);
  EXPECT_THROW(fp8_max(unknown), std::invalid_argument);
  EXPECT_STREQ(format_name(Format::E4M3), "E4M3");
  EXPECT_STREQ(format_name(Format::E5M2), "E5M2");
}

TEST_P(Fp8Format, DecodesEveryCodeAsTheFormatDefines) {
  const Format format = GetParam();
  for (int code = 0; code < 256; ++code) {
    const auto c = static_cast<std::uint8_t>(code);
    const double expected = reference_decode(c, format);
    const float decoded = from_fp8(c, format);
    if (std::isnan(expected)) {
      EXPECT_TRUE(std::isnan(decoded)) << "code " << code;
      EXPECT_EQ(std::signbit(decoded), code >= 0x80) << "code " << code;
      continue;
    }
    ASSERT_EQ(static_cast<double>(static_cast<float>(expected)), expected) << "not a float";
    EXPECT_EQ(bits(decoded), bits(static_cast<float>(expected)))
        << "code " << code << ": " << decoded << " vs " << expected;
  }
}

TEST(Fp8Decode, SpecialCodes) {
  // E4M3: no infinity, only S.1111.111 is NaN.
  int e4m3_nans = 0;
  int e5m2_nans = 0;
  for (int code = 0; code < 256; ++code) {
    const auto c = static_cast<std::uint8_t>(code);
    e4m3_nans += std::isnan(from_fp8(c, Format::E4M3)) ? 1 : 0;
    e5m2_nans += std::isnan(from_fp8(c, Format::E5M2)) ? 1 : 0;
    EXPECT_FALSE(std::isinf(from_fp8(c, Format::E4M3))) << "code " << code;
  }
  EXPECT_EQ(e4m3_nans, 2);
  EXPECT_TRUE(std::isnan(from_fp8(0x7F, Format::E4M3)));
  EXPECT_TRUE(std::isnan(from_fp8(0xFF, Format::E4M3)));
  // E5M2: S.11111.00 is ±inf, S.11111.{01,10,11} NaN.
  EXPECT_EQ(e5m2_nans, 6);
  EXPECT_EQ(from_fp8(0x7C, Format::E5M2), std::numeric_limits<float>::infinity());
  EXPECT_EQ(from_fp8(0xFC, Format::E5M2), -std::numeric_limits<float>::infinity());
  // Signed zeros.
  EXPECT_EQ(bits(from_fp8(0x00, Format::E4M3)), 0x00000000u);
  EXPECT_EQ(bits(from_fp8(0x80, Format::E4M3)), 0x80000000u);
  EXPECT_EQ(bits(from_fp8(0x80, Format::E5M2)), 0x80000000u);
}

TEST_P(Fp8Format, EveryFiniteCodeRoundTrips) {
  const Format format = GetParam();
  for (int code = 0; code < 256; ++code) {
    const auto c = static_cast<std::uint8_t>(code);
    const float value = from_fp8(c, format);
    if (std::isnan(value) || std::isinf(value)) continue;
    EXPECT_EQ(to_fp8(value, format), c) << "code " << code << " value " << value;
  }
}

TEST(Fp8Encode, E5M2InfinityCodesSaturateOnTheWayBack) {
  // The cast saturates, so the infinities it decodes to come back as ±max (S.11110.11).
  EXPECT_EQ(to_fp8(from_fp8(0x7C, Format::E5M2), Format::E5M2), 0x7B);
  EXPECT_EQ(to_fp8(from_fp8(0xFC, Format::E5M2), Format::E5M2), 0xFB);
}

TEST_P(Fp8Format, MidpointsRoundToTheEvenCodeAndNeighboursToTheNearest) {
  const Format format = GetParam();
  const auto& values = positive_finite_values(format);
  for (std::size_t i = 0; i + 1 < values.size(); ++i) {
    const auto [lo, lo_code] = values[i];
    const auto [hi, hi_code] = values[i + 1];
    ASSERT_EQ(hi_code, lo_code + 1) << "consecutive values have consecutive codes";
    const double midpoint_exact = (lo + hi) / 2;
    const auto midpoint = static_cast<float>(midpoint_exact);
    ASSERT_EQ(static_cast<double>(midpoint), midpoint_exact) << "midpoint not a float";
    const std::uint8_t even = (lo_code & 1) == 0 ? lo_code : hi_code;
    const float below = std::nextafter(midpoint, 0.0f);
    const float above = std::nextafter(midpoint, std::numeric_limits<float>::infinity());
    for (const float sign : {1.0f, -1.0f}) {
      const std::uint8_t sign_bit = sign < 0 ? 0x80 : 0x00;
      EXPECT_EQ(to_fp8(sign * midpoint, format), sign_bit | even) << sign * midpoint;
      EXPECT_EQ(to_fp8(sign * below, format), sign_bit | lo_code) << sign * below;
      EXPECT_EQ(to_fp8(sign * above, format), sign_bit | hi_code) << sign * above;
    }
  }
}

TEST(Fp8Encode, E4M3SaturatesAtItsMaximum) {
  // Max 448 = 1.75 * 2^8; the next value the exponent could hold, 1.875 * 2^8 = 480, is NaN's
  // code, so the would-be rounding boundary is 464. Everything above 448 saturates to 448.
  const float inf = std::numeric_limits<float>::infinity();
  for (const float x : {448.0f, std::nextafter(448.0f, inf), 463.99997f, 464.0f, 479.0f, 480.0f,
                        481.0f, 1.0e6f, FLT_MAX, inf}) {
    EXPECT_EQ(to_fp8(x, Format::E4M3), 0x7E) << x;
    EXPECT_EQ(to_fp8(-x, Format::E4M3), 0xFE) << -x;
  }
}

TEST(Fp8Encode, E5M2SaturatesAtItsMaximumAndNeverGivesInfinity) {
  // Max 57344 = 1.75 * 2^15; next would be 2^16 = 65536 (the infinity code): boundary 61440.
  const float inf = std::numeric_limits<float>::infinity();
  for (const float x : {57344.0f, std::nextafter(57344.0f, inf), std::nextafter(61440.0f, 0.0f),
                        61440.0f, 65536.0f, 1.0e10f, FLT_MAX, inf}) {
    EXPECT_EQ(to_fp8(x, Format::E5M2), 0x7B) << x;
    EXPECT_EQ(to_fp8(-x, Format::E5M2), 0xFB) << -x;
  }
}

TEST(Fp8Encode, E4M3Subnormals) {
  // Smallest subnormal 2^(1-7) * 1/8 = 2^-9; largest 7 * 2^-9; smallest normal 2^-6 = 8 * 2^-9.
  EXPECT_EQ(to_fp8(std::ldexp(1.0f, -9), Format::E4M3), 0x01);
  EXPECT_EQ(to_fp8(std::ldexp(1.0f, -10), Format::E4M3), 0x00);  // halfway to 0: even is 0
  EXPECT_EQ(to_fp8(-std::ldexp(1.0f, -10), Format::E4M3), 0x80);
  EXPECT_EQ(to_fp8(std::nextafter(std::ldexp(1.0f, -10), 1.0f), Format::E4M3), 0x01);
  EXPECT_EQ(to_fp8(std::ldexp(3.0f, -10), Format::E4M3), 0x02);  // 1.5 quanta: even is 2
  EXPECT_EQ(to_fp8(std::ldexp(7.0f, -9), Format::E4M3), 0x07);
  EXPECT_EQ(to_fp8(std::ldexp(7.5f, -9), Format::E4M3), 0x08);  // 0x07 | 0x08: even is 0x08
  EXPECT_EQ(to_fp8(std::ldexp(1.0f, -6), Format::E4M3), 0x08);
}

TEST(Fp8Encode, E5M2Subnormals) {
  // Smallest subnormal 2^(1-15) * 1/4 = 2^-16; largest 3 * 2^-16; smallest normal 2^-14.
  EXPECT_EQ(to_fp8(std::ldexp(1.0f, -16), Format::E5M2), 0x01);
  EXPECT_EQ(to_fp8(std::ldexp(1.0f, -17), Format::E5M2), 0x00);
  EXPECT_EQ(to_fp8(std::ldexp(3.0f, -17), Format::E5M2), 0x02);
  EXPECT_EQ(to_fp8(std::ldexp(3.0f, -16), Format::E5M2), 0x03);
  EXPECT_EQ(to_fp8(std::ldexp(3.5f, -16), Format::E5M2), 0x04);
  EXPECT_EQ(to_fp8(-std::ldexp(3.5f, -16), Format::E5M2), 0x84);
}

TEST_P(Fp8Format, TinyValuesAndZerosKeepTheirSign) {
  const Format format = GetParam();
  const float denormal = std::numeric_limits<float>::denorm_min();
  for (const float x : {0.0f, denormal, 1.0e-40f, FLT_MIN, 1.0e-20f}) {
    EXPECT_EQ(to_fp8(x, format), 0x00) << x;
    EXPECT_EQ(to_fp8(-x, format), 0x80) << -x;
  }
}

TEST_P(Fp8Format, NanStaysNanWithItsSign) {
  const Format format = GetParam();
  // Quiet, signalling and the smallest-payload NaN (one above infinity's pattern).
  for (const std::uint32_t pattern : {0x7FC00000u, 0x7F800001u, 0x7FBFFFFFu, 0x7FFFFFFFu}) {
    const std::uint8_t positive = to_fp8(from_bits(pattern), format);
    const std::uint8_t negative = to_fp8(from_bits(pattern | 0x80000000u), format);
    EXPECT_TRUE(std::isnan(reference_decode(positive, format))) << std::hex << pattern;
    EXPECT_TRUE(std::isnan(reference_decode(negative, format))) << std::hex << pattern;
    EXPECT_EQ(positive & 0x80, 0x00);
    EXPECT_EQ(negative & 0x80, 0x80);
  }
}

TEST_P(Fp8Format, AgreesWithNearestSearchNearTiesAtEveryExponent) {
  // Every sign, float exponent and top 3 mantissa bits (the top 12 bits), with low 20 bits at
  // and around E4M3's tie (20 dropped bits, half 0x80000) and E5M2's (21 dropped bits: half is
  // the top-12 part's last bit with low bits 0, just below it that bit 0 and low 0xFFFFF): the
  // cases a rounding bug hides in. Exponent 255 adds infinity and NaNs.
  const Format format = GetParam();
  for (std::uint32_t high = 0; high < (1u << 12); ++high) {
    for (const std::uint32_t low : {0x00000u, 0x00001u, 0x7FFFFu, 0x80000u, 0x80001u, 0xFFFFFu}) {
      const std::uint32_t pattern = (high << 20) | low;
      const float x = from_bits(pattern);
      const std::uint8_t got = to_fp8(x, format);
      if (std::isnan(x)) {
        ASSERT_TRUE(std::isnan(reference_decode(got, format))) << std::hex << pattern;
      } else {
        ASSERT_EQ(got, reference_encode(static_cast<double>(x), format))
            << "x = " << x << " (0x" << std::hex << pattern << ")";
      }
    }
  }
}

TEST_P(Fp8Format, AgreesWithNearestSearchOnRandomFloats) {
  const Format format = GetParam();
  std::mt19937 random(20240607u);
  // Exponents from far below the subnormals to far above max, plus arbitrary bit patterns
  // (NaNs, infinities, float subnormals).
  std::uniform_int_distribution<std::uint32_t> exponent(127 - 40, 127 + 20);
  std::uniform_int_distribution<std::uint32_t> any;
  for (int i = 0; i < 200000; ++i) {
    std::uint32_t pattern = any(random);
    if (i % 4 != 0) pattern = (pattern & 0x807FFFFFu) | (exponent(random) << 23);
    const float x = from_bits(pattern);
    const std::uint8_t expected = reference_encode(static_cast<double>(x), format);
    const std::uint8_t got = to_fp8(x, format);
    if (std::isnan(x)) {
      EXPECT_TRUE(std::isnan(reference_decode(got, format)));
      EXPECT_EQ(got & 0x80, expected & 0x80);
    } else {
      ASSERT_EQ(got, expected) << "x = " << x << " (0x" << std::hex << pattern << ")";
    }
  }
}

}  // namespace
}  // namespace fp8sm::kernels
