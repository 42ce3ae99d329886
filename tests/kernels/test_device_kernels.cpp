// Every CUDA kernel against its CPU reference, bit for bit (a fast GEMM within its documented
// tolerance), over many shapes (not multiples of the tile too), both formats,
// float32 and bf16 inputs, and NaN / infinity / zero / tiny values. Built twice: on the host
// emulation of the kernels (test_emulated_kernels, runs everywhere: the same launches, shapes
// and argument lists the GPU gets) and on the GPU (test_cuda_kernels, FP8SM_TEST_ON_GPU:
// skipped, saying why, where no GPU is usable).
#include <fmt/core.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <limits>
#include <memory>
#include <random>
#include <vector>

#include "kernels/cast.hpp"
#include "kernels/cuda/device_buffer.hpp"
#include "kernels/dequantize.hpp"
#include "kernels/gemm.hpp"
#include "kernels/layer_math.hpp"
#include "kernels/scale_update.hpp"
#ifdef FP8SM_TEST_ON_GPU
#include "kernels/cuda/cublaslt_gemm.hpp"
#include "kernels/cuda/cuda_device.hpp"
#include "kernels/cuda/gpu_device.hpp"
#else
#include "kernels/cuda/host_emulation/emulated_device.hpp"
#endif

namespace fp8sm::kernels::cuda {
namespace {

class DeviceKernelsTest : public ::testing::Test {
 protected:
  void SetUp() override {
#ifdef FP8SM_TEST_ON_GPU
    if (!device_status().usable) GTEST_SKIP() << device_status().why;
    static NvrtcCompiler compiler;
    static GpuDevice loaded(compiler, /*fast_gemm=*/true);
#else
    static EmulatedDevice loaded;
#endif
    device_ = &loaded;
  }
  Device& device() { return *device_; }
  Device* device_ = nullptr;
};

std::uint32_t bits(float f) {
  std::uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

// Values a cast meets: normal, tiny, zero of both signs, huge, infinities, NaN.
std::vector<float> inputs(std::size_t count, std::uint64_t seed) {
  std::mt19937_64 random(seed);
  std::uniform_real_distribution<float> uniform(-4.0f, 4.0f);
  std::vector<float> v(count);
  const float specials[] = {0.0f, -0.0f, 1e-30f, -1e-40f, 3e38f, -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::infinity(), 448.0f, 464.0f, 57344.0f,
                            -std::numeric_limits<float>::quiet_NaN()};
  constexpr std::size_t kSpecials = sizeof specials / sizeof specials[0];
  for (std::size_t i = 0; i < count; ++i) v[i] = i % 97 == 5 ? specials[(i / 97) % kSpecials] : uniform(random);
  return v;
}

// 1 x 1 up to several tiles, with every kind of partial edge tile: for the kernel for any shape
// (32 x 32 tiles), and, where rows and cols are multiples of 4, for the vectorized one (64 x 64).
// 255 x 129 is 8 x 5 tiles of 32, partial in both directions (it was 1023 x 129,
// the same edges in four times the blocks: half of the test's elements, and its time).
const std::pair<std::size_t, std::size_t> kShapes[] = {{1, 1},   {1, 33},    {31, 17},   {32, 32}, {33, 1},
                                                       {64, 96}, {100, 257}, {255, 129}, {4, 4},   {8, 132},
                                                       {68, 4},  {100, 260}, {192, 256}, {260, 72}};

// The input as the kernels take it: float32, or the bf16 bit patterns of those values rounded
// to bf16 (by truncation: any pattern will do, the reference gets the same ones).
struct Input {
  std::vector<float> f32;
  std::vector<Bf16> bf16;
  std::vector<std::uint16_t> bf16_bits;
};

Input input(std::size_t count, std::uint64_t seed, bool with_nan) {
  Input in;
  in.f32 = inputs(count, seed);
  if (with_nan) in.f32[count / 2] = std::numeric_limits<float>::quiet_NaN();
  for (float x : in.f32) {
    in.bf16_bits.push_back(static_cast<std::uint16_t>(bits(x) >> 16));
    in.bf16.push_back(Bf16{in.bf16_bits.back()});
  }
  return in;
}

std::string what(Format format, bool bf16, std::size_t rows, std::size_t cols, bool with_nan) {
  return fmt::format("{} {} {}x{}{}", format_name(format), bf16 ? "bf16" : "f32", rows, cols, with_nan ? " with NaN" : "");
}

TEST_F(DeviceKernelsTest, CastAndCastTransposeEqualTheReference) {
  Device& d = device();
  for (bool vectorized : {true, false}) {
    d.set_vectorized(vectorized);
    for (Format format : {Format::E4M3, Format::E5M2}) {
      for (bool bf16 : {false, true}) {
        for (const auto& [rows, cols] : kShapes) {
          for (bool with_nan : {false, true}) {
            const Input x = input(rows * cols, rows * 131 + cols, with_nan);
            const std::size_t n = x.f32.size();
            const float scale = 3.5f;
            std::vector<std::uint8_t> out(n), out_t(n), cast_out(n);
            float amax = 0.0f, cast_amax = 0.0f;
            if (bf16) {
              cast_transpose_to_fp8(x.bf16.data(), rows, cols, scale, format, out.data(), out_t.data(), amax);
              cast_to_fp8(x.bf16.data(), n, scale, format, cast_out.data(), cast_amax);
            } else {
              cast_transpose_to_fp8(x.f32.data(), rows, cols, scale, format, out.data(), out_t.data(), amax);
              cast_to_fp8(x.f32.data(), n, scale, format, cast_out.data(), cast_amax);
            }
            DeviceBuffer<float> d_f32(d, x.f32);
            DeviceBuffer<std::uint16_t> d_bf16(d, x.bf16_bits);
            const void* in = bf16 ? static_cast<const void*>(d_bf16.get()) : static_cast<const void*>(d_f32.get());
            DeviceBuffer<std::uint8_t> d_out(d, n), d_out_t(d, n), d_cast(d, n);
            DeviceBuffer<float> d_amax(d, std::vector<float>{0.0f}), d_cast_amax(d, std::vector<float>{0.0f});
            DeviceBuffer<float> d_scale(d, std::vector<float>{scale}), d_scale_inv(d, 2), d_cast_scale_inv(d, 2);
            d.cast_transpose(in, bf16, rows, cols, d_scale.get(), format, d_out.get(), d_out_t.get(), d_amax.get(),
                             d_scale_inv.get());
            d.cast(in, bf16, n, d_scale.get(), format, d_cast.get(), d_cast_amax.get(), d_cast_scale_inv.get());
            const std::string label = what(format, bf16, rows, cols, with_nan) + (vectorized ? " vectorized" : "");
            EXPECT_EQ(d_out.download(), out) << label;
            EXPECT_EQ(d_out_t.download(), out_t) << label;
            EXPECT_EQ(bits(d_amax.download()[0]), bits(amax)) << label;
            EXPECT_EQ(d_cast.download(), cast_out) << label;
            EXPECT_EQ(bits(d_cast_amax.download()[0]), bits(cast_amax)) << label;
            // Each cast leaves 1 / scale where it was asked to, once (the next float untouched).
            EXPECT_EQ(d_scale_inv.download(), (std::vector<float>{scale_inverse(scale), 0.0f})) << label;
            EXPECT_EQ(d_cast_scale_inv.download(), (std::vector<float>{scale_inverse(scale), 0.0f})) << label;
          }
        }
      }
    }
  }
  d.set_vectorized(true);
}

// The vectorized kernels are taken exactly where the shape and the alignment allow.
TEST_F(DeviceKernelsTest, TheVectorizedKernelsWhereTheyApply) {
  Device& d = device();
  DeviceBuffer<float> in(d, 16 * 20 + 4);
  DeviceBuffer<std::uint16_t> in_bf16(d, 16 * 20 + 4);
  DeviceBuffer<std::uint8_t> out(d, 16 * 20 + 4), out_t(d, 16 * 20 + 4);
  EXPECT_TRUE(d.takes_vectorized_cast_transpose(in.get(), false, 16, 20, out.get(), out_t.get()));
  EXPECT_TRUE(d.takes_vectorized_cast_transpose(in_bf16.get(), true, 16, 20, out.get(), out_t.get()));
  EXPECT_FALSE(d.takes_vectorized_cast_transpose(in.get(), false, 16, 21, out.get(), out_t.get()));
  EXPECT_FALSE(d.takes_vectorized_cast_transpose(in.get(), false, 18, 20, out.get(), out_t.get()));
  EXPECT_FALSE(d.takes_vectorized_cast_transpose(in.get() + 1, false, 16, 20, out.get(), out_t.get()));
  EXPECT_FALSE(d.takes_vectorized_cast_transpose(in_bf16.get() + 2, true, 16, 20, out.get(), out_t.get()));
  EXPECT_FALSE(d.takes_vectorized_cast_transpose(in.get(), false, 16, 20, out.get() + 2, out_t.get()));
  EXPECT_FALSE(d.takes_vectorized_cast_transpose(in.get(), false, 16, 20, out.get(), out_t.get() + 1));
  EXPECT_TRUE(d.takes_vectorized_cast(in.get(), false, 320, out.get()));
  EXPECT_TRUE(d.takes_vectorized_cast(in_bf16.get(), true, 320, out.get()));
  EXPECT_FALSE(d.takes_vectorized_cast(in.get(), false, 322, out.get()));
  EXPECT_FALSE(d.takes_vectorized_cast(in.get() + 2, false, 320, out.get()));
  EXPECT_FALSE(d.takes_vectorized_cast(in.get(), false, 320, out.get() + 1));
  d.set_vectorized(false);
  EXPECT_FALSE(d.takes_vectorized_cast_transpose(in.get(), false, 16, 20, out.get(), out_t.get()));
  EXPECT_FALSE(d.takes_vectorized_cast(in.get(), false, 320, out.get()));
  d.set_vectorized(true);
#ifndef FP8SM_TEST_ON_GPU
  // And the emulation saw the launch it chose.
  auto& emulated = static_cast<EmulatedDevice&>(d);
  const std::size_t before = emulated.launches("fp8sm_cast_transpose_vec_f32_e4m3");
  DeviceBuffer<float> amax(d, 1), one(d, std::vector<float>{1.0f});
  d.cast_transpose(in.get(), false, 16, 20, one.get(), Format::E4M3, out.get(), out_t.get(), amax.get());
  EXPECT_EQ(emulated.launches("fp8sm_cast_transpose_vec_f32_e4m3"), before + 1);
  const std::size_t casts = emulated.launches("fp8sm_cast_vec_f32_e4m3");
  d.cast(in.get(), false, 320, one.get(), Format::E4M3, out.get(), amax.get());
  EXPECT_EQ(emulated.launches("fp8sm_cast_vec_f32_e4m3"), casts + 1);
#endif
}

// Shapes whose grid would pass CUDA's 65535 blocks in y are refused before anything runs (the
// kernels are never reached, so the buffers can be small).
TEST_F(DeviceKernelsTest, ShapesPastTheGridAreRefused) {
  Device& d = device();
  DeviceBuffer<float> in(d, 16), amax(d, 1), c(d, 16), one(d, std::vector<float>{1.0f});
  DeviceBuffer<std::uint8_t> out(d, 16), out_t(d, 16);
  EXPECT_THROW(d.cast_transpose(in.get(), false, 65535u * 32u + 1, 1, one.get(), Format::E4M3, out.get(), out_t.get(),
                                amax.get()),
               std::invalid_argument);
  EXPECT_THROW(d.cast_transpose(in.get(), false, 65535u * 64u + 4, 4, one.get(), Format::E4M3, out.get(), out_t.get(),
                                amax.get()),
               std::invalid_argument);
  EXPECT_THROW(d.gemm_tn_reference(out.get(), Format::E4M3, one.get(), out.get(), Format::E4M3, one.get(),
                                   65535u * 16u + 1, 1, 1, c.get()),
               std::invalid_argument);
  EXPECT_THROW(d.matmul_nt(c.get(), c.get(), 65535u * 16u + 1, 1, 1, c.get()), std::invalid_argument);
}

// Every conversion the kernels can make, through the cast kernel: evenly spread float32 bit
// patterns and every pattern near each FP8 value and each midpoint between neighbours, both
// signs, NaNs and infinities included. On a GPU of sm_89 or later this is what checks the
// hardware conversion (fp8_device.cuh) against the reference; the emulation runs the integer
// steps on a sparser sample.
TEST_F(DeviceKernelsTest, EveryKindOfFloatCastsAsTheReference) {
#ifdef FP8SM_TEST_ON_GPU
  const std::uint64_t stride = 256;
  const std::int64_t near = 512;
#else
  const std::uint64_t stride = 1u << 16;
  const std::int64_t near = 8;
#endif
  Device& d = device();
  for (Format format : {Format::E4M3, Format::E5M2}) {
    std::vector<std::uint32_t> patterns;
    for (std::uint64_t b = 0; b <= 0xFFFFFFFFull; b += stride) patterns.push_back(static_cast<std::uint32_t>(b));
    for (int code = 0; code < 255; ++code) {
      const float value = from_fp8(static_cast<std::uint8_t>(code), format);
      const float next = from_fp8(static_cast<std::uint8_t>(code + 1), format);
      for (float centre : {value, 0.5f * (value + next)}) {
        if (!std::isfinite(centre)) continue;
        const auto c = static_cast<std::int64_t>(bits(centre));
        for (std::int64_t delta = -near; delta <= near; ++delta) {
          if (c + delta >= 0 && c + delta <= 0xFFFFFFFFll) patterns.push_back(static_cast<std::uint32_t>(c + delta));
        }
      }
    }
    std::vector<float> x(patterns.size());
    std::memcpy(x.data(), patterns.data(), x.size() * sizeof(float));
    std::vector<std::uint8_t> expected(x.size());
    float amax = 0.0f;
    cast_to_fp8(x.data(), x.size(), 1.0f, format, expected.data(), amax);
    DeviceBuffer<float> d_x(d, x), d_amax(d, std::vector<float>{0.0f}), one(d, std::vector<float>{1.0f});
    DeviceBuffer<std::uint8_t> d_out(d, x.size());
    d.cast(d_x.get(), false, x.size(), one.get(), format, d_out.get(), d_amax.get());
    const std::vector<std::uint8_t> got = d_out.download();
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < x.size() && wrong < 10; ++i) {
      if (got[i] != expected[i]) {
        ++wrong;
        ADD_FAILURE() << format_name(format) << " bits 0x" << std::hex << patterns[i] << ": device 0x" << int{got[i]}
                      << ", reference 0x" << int{expected[i]};
      }
    }
    EXPECT_EQ(bits(d_amax.download()[0]), bits(amax));
  }
}

// The amax accumulates into what the buffer held: a larger earlier amax stays, a smaller one
// is replaced.
TEST_F(DeviceKernelsTest, AmaxAccumulatesIntoTheBuffer) {
  Device& d = device();
  const Input x = input(40 * 50, 3, false);
  for (float before : {0.5f, 1e30f}) {
    float amax = before;
    std::vector<std::uint8_t> out(x.f32.size()), out_t(x.f32.size());
    cast_transpose_to_fp8(x.f32.data(), 40, 50, 1.0f, Format::E4M3, out.data(), out_t.data(), amax);
    DeviceBuffer<float> d_x(d, x.f32), d_amax(d, std::vector<float>{before}), one(d, std::vector<float>{1.0f});
    DeviceBuffer<std::uint8_t> d_out(d, out.size()), d_out_t(d, out.size());
    d.cast_transpose(d_x.get(), false, 40, 50, one.get(), Format::E4M3, d_out.get(), d_out_t.get(), d_amax.get());
    EXPECT_EQ(bits(d_amax.download()[0]), bits(amax)) << before;
  }
}

TEST_F(DeviceKernelsTest, DequantizeEveryCode) {
  Device& d = device();
  for (Format format : {Format::E4M3, Format::E5M2}) {
    std::vector<std::uint8_t> codes(256 * 3 + 7);
    for (std::size_t i = 0; i < codes.size(); ++i) codes[i] = static_cast<std::uint8_t>(i * 7);
    std::vector<float> expected(codes.size());
    dequantize(codes.data(), codes.size(), format, 0.125f, expected.data());
    DeviceBuffer<std::uint8_t> d_codes(d, codes);
    DeviceBuffer<float> d_out(d, codes.size());
    d.dequantize(d_codes.get(), codes.size(), format, 0.125f, d_out.get());
    const std::vector<float> got = d_out.download();
    for (std::size_t i = 0; i < codes.size(); ++i) EXPECT_EQ(bits(got[i]), bits(expected[i])) << int{codes[i]};
  }
}

std::vector<std::uint8_t> random_codes(std::size_t count, std::uint64_t seed, Format format) {
  std::mt19937_64 random(seed);
  std::vector<std::uint8_t> codes(count);
  for (auto& c : codes) {
    do {
      c = static_cast<std::uint8_t>(random());
    } while (std::isnan(from_fp8(c, format)) || std::isinf(from_fp8(c, format)));
  }
  return codes;
}

TEST_F(DeviceKernelsTest, ReferenceGemmIsBitExactAndTheFastGemmWithinTolerance) {
  Device& d = device();
  const struct { std::size_t m, n, k; } shapes[] = {{1, 1, 1}, {3, 5, 7}, {17, 33, 65}, {64, 48, 96}, {128, 256, 512}};
  const std::pair<Format, Format> formats[] = {{Format::E4M3, Format::E4M3},
                                               {Format::E5M2, Format::E4M3},
                                               {Format::E4M3, Format::E5M2},
                                               {Format::E5M2, Format::E5M2}};
  for (const auto& s : shapes) {
    for (const auto& [fa, fb] : formats) {
      const auto a = random_codes(s.m * s.k, s.m + s.k, fa);
      const auto b = random_codes(s.n * s.k, s.n * 3 + s.k, fb);
      const float sa = 0.5f, sb = 0.25f;
      std::vector<float> expected(s.m * s.n);
      gemm_tn({a.data(), s.m, fa, sa}, {b.data(), s.n, fb, sb}, s.k, expected.data());
      DeviceBuffer<std::uint8_t> d_a(d, a), d_b(d, b);
      DeviceBuffer<float> d_c(d, s.m * s.n), d_sa(d, std::vector<float>{sa}), d_sb(d, std::vector<float>{sb});
      d.gemm_tn_reference(d_a.get(), fa, d_sa.get(), d_b.get(), fb, d_sb.get(), s.m, s.n, s.k, d_c.get());
      const std::vector<float> got = d_c.download();
      for (std::size_t i = 0; i < got.size(); ++i) ASSERT_EQ(bits(got[i]), bits(expected[i])) << i;

      const bool fast = d.takes_fast_gemm(s.m, s.n, s.k, fa, fb);
#ifdef FP8SM_TEST_ON_GPU
      EXPECT_EQ(fast, CublasLtGemm::supports(s.m, s.n, s.k, fa, fb)) << s.m << "x" << s.n << "x" << s.k;
#else
      EXPECT_FALSE(fast) << "the emulation has no fast GEMM";
#endif
      if (!fast) continue;
      DeviceBuffer<float> d_fast(d, s.m * s.n);
      d.gemm_tn_fast(d_a.get(), fa, d_sa.get(), d_b.get(), fb, d_sb.get(), s.m, s.n, s.k, d_fast.get());
      // The fast GEMM's tolerance (kernels/README.md): FP8 tensor cores may add with about 14
      // bits inside an instruction, so each element within (k + 2) 2^-12 of Σ|ab| (a bound
      // on a hardware we cannot see), and the whole matrix within 2^-8 in relative Frobenius
      // norm, which a swapped operand, a wrong scale or a misread format exceed many times.
      const std::vector<float> got_fast = d_fast.download();
      double diff2 = 0, ref2 = 0;
      for (std::size_t i = 0; i < s.m; ++i) {
        for (std::size_t j = 0; j < s.n; ++j) {
          double sum_abs = 0;
          for (std::size_t p = 0; p < s.k; ++p) {
            sum_abs += std::fabs(static_cast<double>(from_fp8(a[i * s.k + p], fa)) * from_fp8(b[j * s.k + p], fb));
          }
          const double tolerance = static_cast<double>(s.k + 2) * std::ldexp(1.0, -12) * sum_abs * sa * sb;
          const double e = expected[i * s.n + j], g = got_fast[i * s.n + j];
          EXPECT_NEAR(g, e, tolerance) << i << "," << j;
          diff2 += (g - e) * (g - e);
          ref2 += e * e;
        }
      }
      EXPECT_LE(std::sqrt(diff2), std::ldexp(1.0, -8) * std::sqrt(ref2)) << s.m << "x" << s.n << "x" << s.k;
    }
  }
}

TEST_F(DeviceKernelsTest, FusedAndUnfusedUpdatesOfManyTensorsInOneLaunch) {
  Device& d = device();
  // Histories of one row, of less than a warp's rows, of more, and of more than one pass of the
  // kernel (32 x 32 rows a warp): the roll must cross every boundary.
  for (std::size_t length : {1u, 2u, 16u, 33u, 1025u, 2100u}) {
    for (UpdatePath path : {UpdatePath::Fused, UpdatePath::Unfused}) {
      for (AmaxComputeAlgo algo : {AmaxComputeAlgo::Max, AmaxComputeAlgo::MostRecent}) {
        // Short histories: about 600 slots, several blocks, tensors across block boundaries.
        const std::size_t tensors = length <= 33 ? 300 : 12;
        std::mt19937_64 random(11 + length);
        std::vector<ScalingMeta> metas;
        for (std::size_t t = 0; t < tensors; ++t) {
          ScalingMeta m = ScalingMeta::fresh(length, 1 + t % 3);
          for (float& h : m.amax_history) h = static_cast<float>(random() % 1000) / 100.0f;
          m.amax(0, 0) = t % 7 == 0 ? 0.0f : m.amax(0, 0);  // a zero current amax
          if (t == 5 && length > 3) m.amax(3, 0) = std::numeric_limits<float>::quiet_NaN();
          if (t == 8) m.amax(length - 1, 0) = std::numeric_limits<float>::quiet_NaN();  // the oldest row
          if (t == 9 && length > 1) m.amax(length / 2, 0) = 1e4f;                       // the maximum, mid-history
          metas.push_back(m);
        }
        std::vector<ScalingMeta> expected = metas;
        std::vector<ScalingMeta*> pointers;
        for (auto& m : expected) pointers.push_back(&m);
        std::vector<float> reduced = current_amaxes(pointers);
        reduced[4] = std::numeric_limits<float>::infinity();
        const ScaleUpdateRecipe recipe{Format::E4M3, 1, algo, path};
        update_scales(pointers, reduced, recipe);

        std::vector<ScalingMeta*> on_device;
        for (auto& m : metas) on_device.push_back(&m);
        d.update_scales(on_device, reduced, recipe);  // one scale_update launch for all of them
        for (std::size_t t = 0; t < tensors; ++t) {
          const auto& h = metas[t].amax_history;
          const auto& s = metas[t].scale;
          for (std::size_t i = 0; i < h.size(); ++i)
            EXPECT_EQ(bits(h[i]), bits(expected[t].amax_history[i])) << t << " " << i;
          for (std::size_t i = 0; i < s.size(); ++i) EXPECT_EQ(bits(s[i]), bits(expected[t].scale[i])) << t << " " << i;
        }
      }
    }
  }
}

// The runtime's fp32 operations (elementwise.cu), against what the runtime's CPU backend
// computes, written out here: the same values bit for bit, NaN, -0 and subnormals included.
std::vector<float> awkward_values(std::size_t count, std::uint64_t seed) {
  std::mt19937_64 random(seed);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<float> v(count);
  for (float& x : v) x = normal(random);
  const float specials[] = {0.0f, -0.0f, std::numeric_limits<float>::denorm_min(), -1e-39f, 1e30f, -1e30f};
  for (std::size_t i = 0; i < std::size(specials) && i < count; ++i) v[i * 7 % count] = specials[i];
  return v;
}

TEST_F(DeviceKernelsTest, Fp32OperationsEqualTheRuntimesCpuCode) {
  Device& d = device();
  for (std::size_t n : {1u, 255u, 1000u}) {
    const std::vector<float> x = awkward_values(n, n), y = awkward_values(n, n + 1);
    DeviceBuffer<float> d_x(d, x), d_y(d, y), d_out(d, n), d_w(d, x);
    const float rate = 0.05f;
    std::vector<float> relu(n), relu_back(n), sum(n), sgd(n);
    for (std::size_t i = 0; i < n; ++i) {
      relu[i] = x[i] > 0.0f ? x[i] : 0.0f;
      relu_back[i] = x[i] > 0.0f ? y[i] : 0.0f;
      sum[i] = x[i] + y[i];
      sgd[i] = x[i] - rate * y[i];
    }
    const auto same = [&](const std::vector<float>& got, const std::vector<float>& want, const char* what) {
      for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(bits(got[i]), bits(want[i])) << what << " " << i << " of " << n;
    };
    d.relu(d_x.get(), n, d_out.get());
    same(d_out.download(), relu, "relu");
    d.relu_backward(d_x.get(), d_y.get(), n, d_out.get());
    same(d_out.download(), relu_back, "relu_backward");
    d.add(d_x.get(), d_y.get(), n, d_out.get());
    same(d_out.download(), sum, "add");
    d.add(d_x.get(), d_y.get(), n, d_x.get());  // in place, as gradient sums are
    same(d_x.download(), sum, "add in place");
    d.sgd(d_w.get(), d_y.get(), rate, n);
    same(d_w.download(), sgd, "sgd");
  }
  const struct { std::size_t m, n, k; } shapes[] = {{1, 1, 1}, {3, 5, 7}, {17, 33, 65}, {4, 1, 300}};
  for (const auto& s : shapes) {
    const std::vector<float> a = awkward_values(s.m * s.k, s.m), b = awkward_values(s.n * s.k, s.n + 9);
    std::vector<float> c(s.m * s.n), t(s.k * s.m);
    for (std::size_t i = 0; i < s.m; ++i) {
      for (std::size_t j = 0; j < s.n; ++j) {
        float acc = 0.0f;
        for (std::size_t p = 0; p < s.k; ++p) acc += a[i * s.k + p] * b[j * s.k + p];
        c[i * s.n + j] = acc;
      }
      for (std::size_t p = 0; p < s.k; ++p) t[p * s.m + i] = a[i * s.k + p];
    }
    DeviceBuffer<float> d_a(d, a), d_b(d, b), d_c(d, s.m * s.n), d_t(d, s.k * s.m);
    d.matmul_nt(d_a.get(), d_b.get(), s.m, s.n, s.k, d_c.get());
    d.transpose(d_a.get(), s.m, s.k, d_t.get());
    const std::vector<float> got_c = d_c.download(), got_t = d_t.download();
    for (std::size_t i = 0; i < c.size(); ++i) ASSERT_EQ(bits(got_c[i]), bits(c[i])) << s.m << "x" << s.n << "x" << s.k;
    for (std::size_t i = 0; i < t.size(); ++i) ASSERT_EQ(bits(got_t[i]), bits(t[i])) << s.m << "x" << s.k;
  }
}

// The transformer's layers (layers.cu) against kernels/layer_math.hpp's float versions, bit for
// bit (on a GPU too: both take exp, log and erf from portable_math.cuh).
void expect_same(const std::vector<float>& got, const std::vector<float>& want, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < want.size(); ++i) {
    ASSERT_EQ(bits(got[i]), bits(want[i])) << what << " " << i << ": " << got[i] << " against " << want[i];
  }
}

// Values a layer sees in training: normal, deviation 2.
std::vector<float> layer_values(std::size_t count, std::uint64_t seed) {
  std::mt19937_64 random(seed);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::vector<float> v(count);
  for (float& x : v) x = normal(random);
  return v;
}

TEST_F(DeviceKernelsTest, TheTransformerLayersEqualTheReference) {
  Device& d = device();
  {  // GELU
    const std::vector<float> x = layer_values(300, 5), dy = layer_values(300, 6);
    std::vector<float> y(300), dx(300);
    gelu_forward(x.data(), y.data(), x.size());
    gelu_backward(x.data(), dy.data(), dx.data(), x.size());
    DeviceBuffer<float> d_x(d, x), d_dy(d, dy), d_out(d, 300);
    d.gelu(d_x.get(), 300, d_out.get());
    expect_same(d_out.download(), y, "gelu");
    d.gelu_backward(d_x.get(), d_dy.get(), 300, d_out.get());
    expect_same(d_out.download(), dx, "gelu_backward");
  }

  // LayerNorm: 12 rows of 25, gradients of gamma and beta added to what they held.
  {
    const std::size_t rows = 12, cols = 25;
    const std::vector<float> in = layer_values(rows * cols, 7), g = layer_values(rows * cols, 8);
    std::vector<float> gamma(cols), beta(cols), dgamma(cols, 0.5f), dbeta(cols, -0.25f);
    for (std::size_t c = 0; c < cols; ++c) {
      gamma[c] = 1.0f + 0.01f * static_cast<float>(c);
      beta[c] = 0.02f * static_cast<float>(c);
    }
    std::vector<float> out(rows * cols), mean(rows), rstd(rows), dx_ref(rows * cols);
    std::vector<float> dgamma_ref = dgamma, dbeta_ref = dbeta;
    layer_norm_forward(in.data(), rows, cols, gamma.data(), beta.data(), 1e-5f, out.data(), mean.data(), rstd.data());
    layer_norm_backward(in.data(), g.data(), rows, cols, gamma.data(), mean.data(), rstd.data(), dx_ref.data(),
                        dgamma_ref.data(), dbeta_ref.data());
    DeviceBuffer<float> d_in(d, in), d_g(d, g), d_gamma(d, gamma), d_beta(d, beta), d_y(d, rows * cols),
        d_mean(d, rows), d_rstd(d, rows), d_dx(d, rows * cols), d_dgamma(d, dgamma), d_dbeta(d, dbeta);
    d.layer_norm(d_in.get(), rows, cols, d_gamma.get(), d_beta.get(), 1e-5f, d_y.get(), d_mean.get(), d_rstd.get());
    expect_same(d_y.download(), out, "layer_norm");
    d.layer_norm_backward(d_in.get(), d_g.get(), rows, cols, d_gamma.get(), d_mean.get(), d_rstd.get(), d_dx.get(),
                          d_dgamma.get(), d_dbeta.get());
    expect_same(d_dx.download(), dx_ref, "layer_norm_backward dx");
    expect_same(d_dgamma.download(), dgamma_ref, "layer_norm_backward dgamma");
    expect_same(d_dbeta.download(), dbeta_ref, "layer_norm_backward dbeta");
  }

  // Causal attention: 3 sequences of 5 positions, width 4.
  {
    const std::size_t sequences = 3, length = 5, width = 4, rows = sequences * length;
    std::vector<float> qkv = layer_values(rows * 3 * width, 9), g = layer_values(rows * width, 10);
    std::vector<float> out(rows * width), p(rows * length), dqkv(qkv.size());
    causal_attention_forward(qkv.data(), sequences, length, width, out.data(), p.data());
    causal_attention_backward(qkv.data(), p.data(), g.data(), sequences, length, width, dqkv.data());
    DeviceBuffer<float> d_qkv(d, qkv), d_g(d, g), d_out(d, out.size()), d_p(d, p.size()), d_dqkv(d, qkv.size()),
        scratch(d, sequences * length);
    d.causal_attention(d_qkv.get(), sequences, length, width, d_out.get(), d_p.get());
    expect_same(d_out.download(), out, "attention");
    expect_same(d_p.download(), p, "attention probabilities");
    d.causal_attention_backward(d_qkv.get(), d_p.get(), d_g.get(), sequences, length, width, d_dqkv.get(),
                                scratch.get());
    expect_same(d_dqkv.download(), dqkv, "attention backward");
  }

  // Cross-entropy: 6 rows of 5 classes, two rows not counted.
  {
    const std::size_t rows = 6, cols = 5;
    const std::vector<float> bounded = layer_values(rows * cols, 11);
    const std::vector<int> targets = {0, -1, 4, 2, -1, 1};
    std::vector<float> p(rows * cols), dlogits(rows * cols);
    const float loss = softmax_cross_entropy_forward(bounded.data(), rows, cols, targets.data(), p.data());
    softmax_cross_entropy_backward(p.data(), rows, cols, targets.data(), 0.75f, dlogits.data());
    DeviceBuffer<float> d_logits(d, bounded), d_p(d, p.size()), terms(d, rows), d_loss(d, 1),
        d_dloss(d, std::vector<float>{0.75f}), d_dlogits(d, p.size());
    DeviceBuffer<int> d_targets(d, targets);
    d.cross_entropy(d_logits.get(), rows, cols, d_targets.get(), 4, d_p.get(), terms.get(), d_loss.get());
    expect_same(d_loss.download(), {loss}, "cross_entropy");
    expect_same(d_p.download(), p, "cross_entropy probabilities");
    d.cross_entropy_backward(d_p.get(), rows, cols, d_targets.get(), 4, d_dloss.get(), d_dlogits.get());
    expect_same(d_dlogits.download(), dlogits, "cross_entropy backward");
  }

  // Embedding: rows of a table by token, and the gradient added back by token, rows in order.
  {
    const std::size_t vocabulary = 4, width = 3;
    const std::vector<float> table = layer_values(vocabulary * width, 12), g = layer_values(5 * width, 13);
    const std::vector<int> tokens = {2, 0, 2, 3, 2};
    std::vector<float> out(tokens.size() * width), grad(vocabulary * width, 0.125f);
    for (std::size_t r = 0; r < tokens.size(); ++r) {
      for (std::size_t c = 0; c < width; ++c) {
        out[r * width + c] = table[static_cast<std::size_t>(tokens[r]) * width + c];
        grad[static_cast<std::size_t>(tokens[r]) * width + c] += g[r * width + c];
      }
    }
    DeviceBuffer<float> d_table(d, table), d_g(d, g), d_out(d, out.size()),
        d_grad(d, std::vector<float>(vocabulary * width, 0.125f));
    DeviceBuffer<int> d_tokens(d, tokens);
    d.embedding(d_table.get(), d_tokens.get(), tokens.size(), width, d_out.get());
    EXPECT_EQ(d_out.download(), out);
    d.embedding_backward(d_g.get(), d_tokens.get(), tokens.size(), width, d_grad.get());
    const std::vector<float> got = d_grad.download();
    for (std::size_t i = 0; i < got.size(); ++i) ASSERT_EQ(bits(got[i]), bits(grad[i])) << "embedding backward " << i;
  }

  // Adam: one step, written out as the example's CPU loop.
  {
    const std::vector<float> w0 = layer_values(50, 14), g = layer_values(50, 15);
    std::vector<float> m(50, 0.01f), v(50, 0.02f), w = w0;
    const Device::AdamConstants k{0.9f, 1.0f - 0.9f, 0.999f, 1.0f - 0.999f, 3e-3f, 0.19f, 0.002f, 1e-8f};
    for (std::size_t i = 0; i < w.size(); ++i) {
      m[i] = k.beta1 * m[i] + k.one_minus_beta1 * g[i];
      v[i] = k.beta2 * v[i] + k.one_minus_beta2 * g[i] * g[i];
      w[i] -= k.rate * (m[i] / k.correction1) / (std::sqrt(v[i] / k.correction2) + k.epsilon);
    }
    DeviceBuffer<float> d_w(d, w0), d_g(d, g), d_m(d, std::vector<float>(50, 0.01f)),
        d_v(d, std::vector<float>(50, 0.02f));
    d.adam(d_w.get(), d_g.get(), d_m.get(), d_v.get(), 50, k);
    const std::vector<float> got = d_w.download();
    for (std::size_t i = 0; i < got.size(); ++i) ASSERT_EQ(bits(got[i]), bits(w[i])) << "adam " << i;
  }
}

// A key's current amaxes gathered from its histories' row 0, in tensor order.
TEST_F(DeviceKernelsTest, GatherAmaxesReadsRowZeroOfEveryTensorInOrder) {
  Device& d = device();
  const std::vector<unsigned> slots = {2, 1, 3};
  const std::size_t length = 4;
  std::vector<std::unique_ptr<DeviceBuffer<float>>> histories;
  std::vector<float*> pointers;
  std::vector<unsigned> begin = {0};
  std::vector<float> expected;
  for (std::size_t t = 0; t < slots.size(); ++t) {
    std::vector<float> h(length * slots[t]);
    for (std::size_t i = 0; i < h.size(); ++i) h[i] = static_cast<float>(100 * t + i);
    for (unsigned s = 0; s < slots[t]; ++s) expected.push_back(h[s]);
    histories.push_back(std::make_unique<DeviceBuffer<float>>(d, h));
    pointers.push_back(histories.back()->get());
    begin.push_back(begin.back() + slots[t]);
  }
  DeviceBuffer<float*> d_pointers(d, pointers);
  DeviceBuffer<unsigned> d_begin(d, begin);
  DeviceBuffer<float> amaxes(d, begin.back());
  d.gather_amaxes(d_pointers.get(), d_begin.get(), 3, begin.back(), amaxes.get());
  EXPECT_EQ(amaxes.download(), expected);
}

// Copies are counted: what crosses between host and device, apart from copies on the device.
TEST_F(DeviceKernelsTest, TheDeviceCountsItsCopies) {
  Device& d = device();
  d.reset_traffic();
  DeviceBuffer<float> a(d, std::vector<float>(10, 1.0f)), b(d, 10);
  d.copy(b.get(), a.get(), 10 * sizeof(float));
  d.zero(a.get(), 10 * sizeof(float));
  const std::vector<float> back = b.download();
  EXPECT_EQ(back, std::vector<float>(10, 1.0f));
  EXPECT_EQ(a.download(), std::vector<float>(10, 0.0f));
  const Device::Traffic& t = d.traffic();
  EXPECT_EQ(t.uploads, 1u);
  EXPECT_EQ(t.upload_bytes, 40u);
  EXPECT_EQ(t.downloads, 2u);
  EXPECT_EQ(t.download_bytes, 80u);
  EXPECT_EQ(t.device_copies, 1u);
  EXPECT_EQ(t.synchronizations, 2u);
}

#ifdef FP8SM_TEST_ON_GPU
// Runs everywhere: without a GPU the reason is the CUDA runtime's, not a crash.
TEST(CudaDevice, SaysWhyThereIsNone) {
  const DeviceStatus& status = device_status();
  if (status.usable) {
    EXPECT_GE(status.arch, 50);
    EXPECT_FALSE(status.name.empty());
  } else {
    EXPECT_FALSE(status.why.empty());
    NvrtcCompiler compiler("-");
    try {
      GpuDevice gpu(compiler);
      ADD_FAILURE() << "GpuDevice started without a usable GPU";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(status.why), std::string::npos) << e.what();
    }
  }
}
#endif

}  // namespace
}  // namespace fp8sm::kernels::cuda
