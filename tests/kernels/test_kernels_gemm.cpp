// The FP8 GEMM reference: C = (A dequantized) (B dequantized)^T, A m x k and B n x k, both
// K-contiguous, fp32 accumulation in ascending k.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <vector>

#include "fp8_reference.hpp"
#include "kernels/gemm.hpp"

namespace fp8sm::kernels {
namespace {

using fp8_reference::reference_decode;
using fp8_reference::reference_encode;

std::vector<std::uint8_t> encode(const std::vector<double>& values, Format format) {
  std::vector<std::uint8_t> codes;
  for (const double v : values) {
    const std::uint8_t code = reference_encode(v, format);
    EXPECT_EQ(reference_decode(code, format), v) << "not representable: " << v;
    codes.push_back(code);
  }
  return codes;
}

// A (2 x 3) and B (4 x 3) of small values whose products and sums are exact in float32.
const std::vector<double> kA = {1, 2, -0.5,  //
                                3, -1.5, 4};
const std::vector<double> kB = {1, 0, 2,       //
                                0.5, 1, 1,     //
                                -2, 3, 0.25,   //
                                1, 1, 1};
// A B^T by hand (row i of A against row j of B), then times scale_inv_a * scale_inv_b = 2:
//   row 0: 1+0-1 = 0,  0.5+2-0.5 = 2,  -2+6-0.125 = 3.875,  1+2-0.5 = 2.5
//   row 1: 3+0+8 = 11, 1.5-1.5+4 = 4,  -6-4.5+1 = -9.5,     3-1.5+4 = 5.5
const std::vector<float> kExpected = {0, 4, 7.75f, 5,  //
                                      22, 8, -19, 11};

TEST(Gemm, ExactSmallCaseE4M3) {
  const auto a = encode(kA, Format::E4M3);
  const auto b = encode(kB, Format::E4M3);
  std::vector<float> c(8, -1.0f);
  gemm_tn({a.data(), 2, Format::E4M3, 0.5f}, {b.data(), 4, Format::E4M3, 4.0f}, 3, c.data());
  EXPECT_EQ(c, kExpected);
}

TEST(Gemm, ExactSmallCaseMixedFormats) {
  // Gradient GEMMs pair E5M2 with E4M3; every value above is also exact in E5M2.
  const auto a = encode(kA, Format::E4M3);
  const auto b = encode(kB, Format::E5M2);
  std::vector<float> c(8, -1.0f);
  gemm_tn({a.data(), 2, Format::E4M3, 0.5f}, {b.data(), 4, Format::E5M2, 4.0f}, 3, c.data());
  EXPECT_EQ(c, kExpected);
  const auto a5 = encode(kA, Format::E5M2);
  gemm_tn({a5.data(), 2, Format::E5M2, 0.5f}, {b.data(), 4, Format::E5M2, 4.0f}, 3, c.data());
  EXPECT_EQ(c, kExpected);
}

TEST(Gemm, AccumulatesInFloat32InAscendingK) {
  // Products 2^24, 1, 1, -2^24 (E5M2 holds 2^12 and 1). Ascending k in float32: 2^24 + 1 is a
  // tie between 2^24 and 2^24 + 2 and goes to the even 2^24, twice, then -2^24 leaves 0.
  // The exact sum is 2; descending order would give 2 as well, pairwise 1.
  const auto a = encode({4096, 1, 1, -4096}, Format::E5M2);
  const auto b = encode({4096, 1, 1, 4096}, Format::E5M2);
  float c = -1.0f;
  gemm_tn({a.data(), 1, Format::E5M2, 1.0f}, {b.data(), 1, Format::E5M2, 1.0f}, 4, &c);
  EXPECT_EQ(c, 0.0f);
}

// Random finite codes: every code except NaN and infinity.
std::vector<std::uint8_t> random_codes(std::size_t count, Format format, std::mt19937& random) {
  std::uniform_int_distribution<int> any(0, 255);
  std::vector<std::uint8_t> codes;
  while (codes.size() < count) {
    const auto code = static_cast<std::uint8_t>(any(random));
    if (std::isfinite(reference_decode(code, format))) codes.push_back(code);
  }
  return codes;
}

TEST(Gemm, AgreesWithADoubleReferenceWithinTheSummationBound) {
  // Products of two FP8 values are exact in float32, so the float result differs from the
  // exact sum only by the k-1 additions (each at most 2^-24 relative to a partial sum, which
  // is at most sum|p|) and the two roundings of the scaling:
  //   |c - exact| <= (k + 2) * 2^-24 * sum|p| * |scale_inv_a * scale_inv_b|.
  // The double reference itself is off by at most about k * 2^-53 * sum|p|, added in.
  std::mt19937 random(99u);
  const std::size_t m = 7;
  const std::size_t n = 5;
  const std::size_t k = 300;
  for (const auto& [fa, fb] : {std::pair{Format::E4M3, Format::E4M3},
                               std::pair{Format::E5M2, Format::E4M3},
                               std::pair{Format::E4M3, Format::E5M2}}) {
    const auto a = random_codes(m * k, fa, random);
    const auto b = random_codes(n * k, fb, random);
    const float sa = 0.013f;
    const float sb = 3.25f;
    std::vector<float> c(m * n);
    gemm_tn({a.data(), m, fa, sa}, {b.data(), n, fb, sb}, k, c.data());
    for (std::size_t i = 0; i < m; ++i) {
      for (std::size_t j = 0; j < n; ++j) {
        double exact = 0;
        double magnitude = 0;
        for (std::size_t p = 0; p < k; ++p) {
          const double product =
              reference_decode(a[i * k + p], fa) * reference_decode(b[j * k + p], fb);
          exact += product;
          magnitude += std::fabs(product);
        }
        const double factor = static_cast<double>(sa) * static_cast<double>(sb);
        const double bound = (static_cast<double>(k + 2) * std::ldexp(1.0, -24) +
                              static_cast<double>(k + 2) * std::ldexp(1.0, -52)) *
                             magnitude * factor;
        EXPECT_NEAR(static_cast<double>(c[i * n + j]), exact * factor, bound) << i << ", " << j;
      }
    }
  }
}

TEST(Gemm, EmptyInnerDimensionGivesZeros) {
  std::vector<float> c(6, 1.0f);
  const std::uint8_t unused = 0;
  gemm_tn({&unused, 2, Format::E4M3, 1.0f}, {&unused, 3, Format::E4M3, 1.0f}, 0, c.data());
  EXPECT_EQ(c, std::vector<float>(6, 0.0f));
}

TEST(Gemm, NanCodePropagatesToItsRowOnly) {
  // A row 1 holds E4M3 NaN (0x7F); row 0 is 1, 1.
  const std::vector<std::uint8_t> a = {0x38, 0x38, 0x38, 0x7F};
  const std::vector<std::uint8_t> b = {0x38, 0x40};  // B row 0: 1, 2 (0x40 = 2^(8-7))
  std::vector<float> c(2);
  gemm_tn({a.data(), 2, Format::E4M3, 1.0f}, {b.data(), 1, Format::E4M3, 1.0f}, 2, c.data());
  EXPECT_EQ(c[0], 3.0f);
  EXPECT_TRUE(std::isnan(c[1]));
}

TEST(Gemm, NullBuffersThrow) {
  const std::vector<std::uint8_t> a(4, 0x38);
  std::vector<float> c(4);
  EXPECT_THROW(gemm_tn({nullptr, 2, Format::E4M3, 1.0f}, {a.data(), 2, Format::E4M3, 1.0f}, 2,
                       c.data()),
               std::invalid_argument);
  EXPECT_THROW(gemm_tn({a.data(), 2, Format::E4M3, 1.0f}, {a.data(), 2, Format::E4M3, 1.0f}, 2,
                       nullptr),
               std::invalid_argument);
}

}  // namespace
}  // namespace fp8sm::kernels
