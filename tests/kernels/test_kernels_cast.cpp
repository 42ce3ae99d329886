// Casts with amax, cast-transpose, the bf16 input path, scale_inv and dequantization (spec §6,
// Cast). Expected codes come from fp8_reference.hpp's nearest search on x * scale rounded to
// float32, the product the spec quantizes.
#include <fmt/core.h>
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <stdexcept>
#include <utility>
#include <vector>

#include "fp8_reference.hpp"
#include "kernels/amax.hpp"
#include "kernels/bf16.hpp"
#include "kernels/cast.hpp"
#include "kernels/dequantize.hpp"

namespace fp8sm::kernels {
namespace {

using fp8_reference::reference_decode;
using fp8_reference::reference_encode;

constexpr float kInf = std::numeric_limits<float>::infinity();
const float kNan = std::numeric_limits<float>::quiet_NaN();

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

std::vector<float> random_inputs(std::size_t count, std::uint32_t seed) {
  std::mt19937 random(seed);
  std::normal_distribution<float> normal(0.0f, 40.0f);
  std::vector<float> values(count);
  for (float& v : values) v = normal(random);
  return values;
}

TEST(ScaleInverse, IsTheCorrectlyRoundedReciprocal) {
  // A float32 quotient computed in double and rounded once to float is correctly rounded
  // (53 >= 2 * 24 + 2 bits), so that is the independent reference.
  for (const float scale : {1.0f, 2.0f, 3.0f, 7.0f, 0.1f, 448.0f / 3.0f, 1.0e-30f, 1.0e30f,
                            FLT_MAX, 12345.678f}) {
    EXPECT_EQ(bits(scale_inverse(scale)), bits(static_cast<float>(1.0 / scale))) << scale;
  }
  // 1/3 = 1.0101...b x 2^-2: the 24-bit significand rounds up, 0x3EAAAAAB.
  EXPECT_EQ(bits(scale_inverse(3.0f)), 0x3EAAAAABu);
  EXPECT_EQ(scale_inverse(0.0f), kInf);
}

TEST(AmaxFold, OrdersNonNegativeBitPatterns) {
  EXPECT_EQ(bits(amax_fold(0.0f, -0.0f)), 0x00000000u);  // |x| of -0 is +0
  EXPECT_EQ(bits(amax_fold(-0.0f, 0.0f)), 0x00000000u);  // a sign-bit accumulator is lowest
  EXPECT_EQ(amax_fold(0.0f, std::numeric_limits<float>::denorm_min()),
            std::numeric_limits<float>::denorm_min());
  EXPECT_EQ(amax_fold(5.0f, -7.0f), 7.0f);
  EXPECT_EQ(amax_fold(7.0f, -5.0f), 7.0f);
  EXPECT_EQ(amax_fold(FLT_MAX, -kInf), kInf);
  // Every NaN pattern lies above infinity's, so a NaN wins and stays.
  EXPECT_TRUE(std::isnan(amax_fold(kInf, kNan)));
  EXPECT_TRUE(std::isnan(amax_fold(kNan, kInf)));
  EXPECT_TRUE(std::isnan(amax_fold(kNan, 1.0f)));
  EXPECT_EQ(bits(amax_fold(0.0f, from_bits(0xFFC00000u))), 0x7FC00000u);  // -NaN: |x|
  EXPECT_EQ(bits(amax_fold(from_bits(0x7FC00000u), from_bits(0x7F800001u))), 0x7FC00000u);
}

class CastFormat : public ::testing::TestWithParam<Format> {};

INSTANTIATE_TEST_SUITE_P(BothFormats, CastFormat, ::testing::Values(Format::E4M3, Format::E5M2),
                         fp8_reference::FormatName());

TEST_P(CastFormat, QuantizesTheScaledProduct) {
  const Format format = GetParam();
  std::vector<float> input = random_inputs(500, 1u);
  for (const float special : {0.0f, -0.0f, kInf, -kInf, kNan, 1.0e30f, -1.0e30f, 1.0e-30f}) {
    input.push_back(special);
  }
  for (const float scale : {1.0f, 3.7f, 0.001f, 1000.0f}) {
    std::vector<std::uint8_t> output(input.size());
    float amax = 0.0f;
    const float scale_inv =
        cast_to_fp8(input.data(), input.size(), scale, format, output.data(), amax);
    EXPECT_EQ(bits(scale_inv), bits(static_cast<float>(1.0 / scale)));
    for (std::size_t i = 0; i < input.size(); ++i) {
      const float product = input[i] * scale;  // float32, as the spec's x * scale
      const std::uint8_t expected = reference_encode(static_cast<double>(product), format);
      if (std::isnan(product)) {
        EXPECT_TRUE(std::isnan(reference_decode(output[i], format))) << i;
      } else {
        EXPECT_EQ(output[i], expected) << "x = " << input[i] << ", scale " << scale;
      }
    }
  }
}

TEST(Cast, AmaxAccumulatesOverCallsOnTheUnscaledInput) {
  std::vector<std::uint8_t> output(3);
  float amax = 0.0f;
  const std::vector<float> first = {1.0f, -3.0f, 2.0f};
  cast_to_fp8(first.data(), first.size(), 100.0f, Format::E4M3, output.data(), amax);
  EXPECT_EQ(amax, 3.0f);  // max|x|, not max|x * scale|
  const std::vector<float> second = {-0.5f};
  cast_to_fp8(second.data(), second.size(), 1.0f, Format::E4M3, output.data(), amax);
  EXPECT_EQ(amax, 3.0f);
  const std::vector<float> third = {-7.0f, 0.0f};
  cast_to_fp8(third.data(), third.size(), 1.0f, Format::E5M2, output.data(), amax);
  EXPECT_EQ(amax, 7.0f);
  cast_to_fp8(third.data(), 0, 1.0f, Format::E5M2, output.data(), amax);
  EXPECT_EQ(amax, 7.0f);
}

TEST(Cast, NanInTheInputBecomesTheAmaxAndStays) {
  std::vector<std::uint8_t> output(3);
  float amax = 0.0f;
  const std::vector<float> with_inf = {1.0f, -kInf, 2.0f};
  cast_to_fp8(with_inf.data(), with_inf.size(), 1.0f, Format::E4M3, output.data(), amax);
  EXPECT_EQ(amax, kInf);
  const std::vector<float> with_nan = {1.0f, -kNan, 2.0f};
  cast_to_fp8(with_nan.data(), with_nan.size(), 1.0f, Format::E4M3, output.data(), amax);
  EXPECT_TRUE(std::isnan(amax));
  EXPECT_FALSE(std::signbit(amax));
  const std::vector<float> large = {1.0e30f};
  cast_to_fp8(large.data(), large.size(), 1.0f, Format::E4M3, output.data(), amax);
  EXPECT_TRUE(std::isnan(amax));
}

TEST(Cast, NullBuffersThrowBeforeWriting) {
  float amax = 5.0f;
  std::vector<std::uint8_t> output(2);
  const std::vector<float> input = {100.0f, 1.0f};
  EXPECT_THROW(cast_to_fp8(static_cast<const float*>(nullptr), 2, 1.0f, Format::E4M3,
                           output.data(), amax),
               std::invalid_argument);
  EXPECT_THROW(cast_to_fp8(input.data(), 2, 1.0f, Format::E4M3, nullptr, amax),
               std::invalid_argument);
  EXPECT_THROW(cast_transpose_to_fp8(input.data(), 1, 2, 1.0f, Format::E4M3, output.data(),
                                     nullptr, amax),
               std::invalid_argument);
  EXPECT_EQ(amax, 5.0f);
  EXPECT_NO_THROW(cast_to_fp8(static_cast<const float*>(nullptr), 0, 1.0f, Format::E4M3,
                              nullptr, amax));
}

TEST_P(CastFormat, CastTransposeWritesTheCastAndItsTranspose) {
  const Format format = GetParam();
  const std::vector<std::pair<std::size_t, std::size_t>> shapes = {
      {1, 1}, {1, 7}, {7, 1}, {3, 5}, {17, 13}, {16, 32}, {0, 4}, {4, 0}};
  for (const auto& [rows, cols] : shapes) {
    SCOPED_TRACE(fmt::format("{} x {}", rows, cols));
    const std::vector<float> input =
        random_inputs(rows * cols, static_cast<std::uint32_t>(rows * 100 + cols));
    const float scale = 2.5f;
    std::vector<std::uint8_t> plain(rows * cols);
    std::vector<std::uint8_t> output(rows * cols, 0xAA);
    std::vector<std::uint8_t> output_t(rows * cols, 0xAA);
    float plain_amax = 0.25f;
    float amax = 0.25f;
    const float plain_inv =
        cast_to_fp8(input.data(), input.size(), scale, format, plain.data(), plain_amax);
    const float inv = cast_transpose_to_fp8(input.data(), rows, cols, scale, format,
                                            output.data(), output_t.data(), amax);
    EXPECT_EQ(bits(inv), bits(plain_inv));
    EXPECT_EQ(bits(amax), bits(plain_amax));
    EXPECT_EQ(output, plain);
    for (std::size_t r = 0; r < rows; ++r) {
      for (std::size_t c = 0; c < cols; ++c) {
        EXPECT_EQ(output_t[c * rows + r], plain[r * cols + c]) << r << ", " << c;
      }
    }
  }
}

TEST(Bf16, WidensToTheUpperHalfOfAFloat) {
  // 1 sign, 8 exponent bits (bias 127), 7 mantissa bits.
  EXPECT_EQ(to_float(Bf16{0x3F80}), 1.0f);
  EXPECT_EQ(to_float(Bf16{0xC000}), -2.0f);
  EXPECT_EQ(to_float(Bf16{0x4049}), 3.140625f);  // 2^1 * (1 + 73/128)
  EXPECT_EQ(to_float(Bf16{0x0001}), std::ldexp(1.0f, -133));  // 2^-126 * 2^-7
  EXPECT_EQ(to_float(Bf16{0x7F80}), kInf);
  EXPECT_EQ(to_float(Bf16{0xFF80}), -kInf);
  EXPECT_TRUE(std::isnan(to_float(Bf16{0x7FC0})));
  EXPECT_EQ(bits(to_float(Bf16{0x8000})), 0x80000000u);
}

TEST_P(CastFormat, Bf16InputMatchesTheFloatPathOnTheSameValues) {
  const Format format = GetParam();
  std::mt19937 random(7u);
  std::uniform_int_distribution<unsigned> any(0, 0xFFFF);
  const std::size_t rows = 9;
  const std::size_t cols = 11;
  std::vector<Bf16> bf16(rows * cols);
  std::vector<float> widened(rows * cols);
  for (std::size_t i = 0; i < bf16.size(); ++i) {
    // Mostly ordinary magnitudes, some arbitrary patterns (inf, NaN, subnormal).
    unsigned pattern = any(random);
    if (i % 5 != 0) pattern = (pattern & 0x807F) | ((120u + pattern % 16u) << 7);
    bf16[i] = Bf16{static_cast<std::uint16_t>(pattern)};
    widened[i] = from_bits(static_cast<std::uint32_t>(pattern) << 16);
  }
  std::vector<std::uint8_t> from_float(bf16.size());
  std::vector<std::uint8_t> from_bf16(bf16.size());
  float float_amax = 0.0f;
  float bf16_amax = 0.0f;
  const float scale = 1.75f;
  EXPECT_EQ(cast_to_fp8(bf16.data(), bf16.size(), scale, format, from_bf16.data(), bf16_amax),
            cast_to_fp8(widened.data(), widened.size(), scale, format, from_float.data(),
                        float_amax));
  EXPECT_EQ(from_bf16, from_float);
  EXPECT_EQ(bits(bf16_amax), bits(float_amax));

  std::vector<std::uint8_t> t_from_float(bf16.size());
  std::vector<std::uint8_t> t_from_bf16(bf16.size());
  cast_transpose_to_fp8(bf16.data(), rows, cols, scale, format, from_bf16.data(),
                        t_from_bf16.data(), bf16_amax);
  cast_transpose_to_fp8(widened.data(), rows, cols, scale, format, from_float.data(),
                        t_from_float.data(), float_amax);
  EXPECT_EQ(from_bf16, from_float);
  EXPECT_EQ(t_from_bf16, t_from_float);
  EXPECT_EQ(bits(bf16_amax), bits(float_amax));
}

TEST_P(CastFormat, DequantizeDecodesAndMultipliesByScaleInv) {
  const Format format = GetParam();
  std::vector<std::uint8_t> codes(256);
  for (int c = 0; c < 256; ++c) codes[static_cast<std::size_t>(c)] = static_cast<std::uint8_t>(c);
  for (const float scale_inv : {1.0f, 0.375f, 1.0e-3f, 3.0e5f}) {
    std::vector<float> output(codes.size());
    dequantize(codes.data(), codes.size(), format, scale_inv, output.data());
    for (std::size_t c = 0; c < codes.size(); ++c) {
      const double decoded = reference_decode(codes[c], format);
      if (std::isnan(decoded)) {
        EXPECT_TRUE(std::isnan(output[c])) << c;
      } else {
        // The decode is exact, so the one rounding is the float32 product.
        const float expected = static_cast<float>(decoded) * scale_inv;
        EXPECT_EQ(bits(output[c]), bits(expected)) << "code " << c << " scale_inv " << scale_inv;
      }
    }
  }
}

TEST(Dequantize, HandPickedCodes) {
  // E4M3 0x38 = 2^(7-7) = 1; 0x3C = 1.5; 0xC4 = -2^(8-7) * 1.5 = -3. E5M2 0x3C = 2^(15-15) = 1.
  const std::vector<std::uint8_t> e4m3 = {0x38, 0x3C, 0xC4, 0x7E};
  std::vector<float> output(e4m3.size());
  dequantize(e4m3.data(), e4m3.size(), Format::E4M3, 0.5f, output.data());
  EXPECT_EQ(output, (std::vector<float>{0.5f, 0.75f, -1.5f, 224.0f}));
  const std::vector<std::uint8_t> e5m2 = {0x3C, 0x7C};
  output.resize(e5m2.size());
  dequantize(e5m2.data(), e5m2.size(), Format::E5M2, 4.0f, output.data());
  EXPECT_EQ(output, (std::vector<float>{4.0f, kInf}));
  EXPECT_THROW(dequantize(nullptr, 1, Format::E4M3, 1.0f, output.data()), std::invalid_argument);
}

TEST_P(CastFormat, QuantizeThenDequantizeIsExactForScaledFp8Values) {
  // x = v / 2^k with v an FP8 value and scale 2^k: x * scale = v exactly, and back.
  const Format format = GetParam();
  std::vector<float> input;
  for (const auto& [value, code] : fp8_reference::positive_finite_values(format)) {
    input.push_back(static_cast<float>(value) / 8.0f);
    input.push_back(-static_cast<float>(value) / 8.0f);
  }
  std::vector<std::uint8_t> codes(input.size());
  float amax = 0.0f;
  const float scale_inv =
      cast_to_fp8(input.data(), input.size(), 8.0f, format, codes.data(), amax);
  EXPECT_EQ(scale_inv, 0.125f);
  const double max_value = fp8_reference::positive_finite_values(format).back().first;
  EXPECT_EQ(amax, static_cast<float>(max_value) / 8.0f);
  std::vector<float> output(input.size());
  dequantize(codes.data(), codes.size(), format, scale_inv, output.data());
  for (std::size_t i = 0; i < input.size(); ++i) EXPECT_EQ(output[i], input[i]) << i;
}

}  // namespace
}  // namespace fp8sm::kernels
