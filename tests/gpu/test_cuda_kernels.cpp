// Every CUDA kernel against its CPU reference, bit for bit (the cuBLASLt GEMM within the
// reference's documented tolerance), over many shapes (not multiples of the tile too), both
// formats, float32 and bf16 inputs, and NaN / infinity / zero / tiny values. Skipped, saying
// why, where no GPU is usable.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <vector>

#include "kernels/cast.hpp"
#include "kernels/cuda/cublaslt_gemm.hpp"
#include "kernels/cuda/cuda_device.hpp"
#include "kernels/cuda/device_buffer.hpp"
#include "kernels/cuda/cuda_kernels.hpp"
#include "kernels/dequantize.hpp"
#include "kernels/gemm.hpp"
#include "kernels/scale_update.hpp"

namespace fp8sm::kernels::cuda {
namespace {

class CudaKernelsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!device_status().usable) GTEST_SKIP() << device_status().why;
    static NvrtcCompiler compiler;
    static CudaKernels loaded(compiler);
    kernels_ = &loaded;
  }
  const CudaKernels* kernels_ = nullptr;
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
                            std::numeric_limits<float>::infinity(), 448.0f, 464.0f, 57344.0f};
  for (std::size_t i = 0; i < count; ++i) v[i] = i % 97 == 5 ? specials[(i / 97) % 10] : uniform(random);
  return v;
}

const std::pair<std::size_t, std::size_t> kShapes[] = {{1, 1}, {1, 33}, {31, 17}, {32, 32}, {64, 96}, {100, 257}, {1023, 129}};

TEST_F(CudaKernelsTest, CastTransposeEqualsTheReference) {
  for (Format format : {Format::E4M3, Format::E5M2}) {
    for (const auto& [rows, cols] : kShapes) {
      for (bool with_nan : {false, true}) {
        std::vector<float> x = inputs(rows * cols, rows * 131 + cols);
        if (with_nan) x[x.size() / 2] = std::numeric_limits<float>::quiet_NaN();
        const float scale = 3.5f;
        std::vector<std::uint8_t> out(x.size()), out_t(x.size());
        float amax = 0.0f;
        cast_transpose_to_fp8(x.data(), rows, cols, scale, format, out.data(), out_t.data(), amax);

        DeviceBuffer<float> d_x(x);
        DeviceBuffer<std::uint8_t> d_out(x.size()), d_out_t(x.size());
        DeviceBuffer<float> d_amax(std::vector<float>{0.0f});
        kernels_->cast_transpose(d_x.get(), false, rows, cols, scale, format, d_out.get(), d_out_t.get(), d_amax.get());
        EXPECT_EQ(d_out.download(), out) << format_name(format) << " " << rows << "x" << cols;
        EXPECT_EQ(d_out_t.download(), out_t) << format_name(format) << " " << rows << "x" << cols;
        EXPECT_EQ(bits(d_amax.download()[0]), bits(amax)) << format_name(format) << " " << rows << "x" << cols;
      }
    }
  }
}

TEST_F(CudaKernelsTest, Bf16CastEqualsTheReference) {
  for (Format format : {Format::E4M3, Format::E5M2}) {
    std::vector<float> x = inputs(4099, 7);
    std::vector<Bf16> host(x.size());
    std::vector<std::uint16_t> raw(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) {
      raw[i] = static_cast<std::uint16_t>(bits(x[i]) >> 16);
      host[i] = Bf16{raw[i]};
    }
    std::vector<std::uint8_t> out(x.size());
    float amax = 0.0f;
    cast_to_fp8(host.data(), host.size(), 0.75f, format, out.data(), amax);
    DeviceBuffer<std::uint16_t> d_x(raw);
    DeviceBuffer<std::uint8_t> d_out(x.size());
    DeviceBuffer<float> d_amax(std::vector<float>{0.0f});
    kernels_->cast(d_x.get(), true, x.size(), 0.75f, format, d_out.get(), d_amax.get());
    EXPECT_EQ(d_out.download(), out);
    EXPECT_EQ(bits(d_amax.download()[0]), bits(amax));
  }
}

TEST_F(CudaKernelsTest, DequantizeEveryCode) {
  for (Format format : {Format::E4M3, Format::E5M2}) {
    std::vector<std::uint8_t> codes(256);
    for (int c = 0; c < 256; ++c) codes[static_cast<std::size_t>(c)] = static_cast<std::uint8_t>(c);
    std::vector<float> expected(256);
    dequantize(codes.data(), codes.size(), format, 0.125f, expected.data());
    DeviceBuffer<std::uint8_t> d_codes(codes);
    DeviceBuffer<float> d_out(256);
    kernels_->dequantize(d_codes.get(), 256, format, 0.125f, d_out.get());
    const std::vector<float> got = d_out.download();
    for (int c = 0; c < 256; ++c) EXPECT_EQ(bits(got[static_cast<std::size_t>(c)]), bits(expected[static_cast<std::size_t>(c)])) << c;
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

TEST_F(CudaKernelsTest, ReferenceGemmIsBitExactAndCublasLtWithinTolerance) {
  const struct { std::size_t m, n, k; } shapes[] = {{1, 1, 1}, {3, 5, 7}, {17, 33, 65}, {64, 48, 96}, {128, 256, 512}};
  const std::pair<Format, Format> formats[] = {{Format::E4M3, Format::E4M3}, {Format::E5M2, Format::E4M3}, {Format::E4M3, Format::E5M2}};
  std::unique_ptr<CublasLtGemm> lt;
  try {
    lt = std::make_unique<CublasLtGemm>();
  } catch (const std::exception& e) {
    ADD_FAILURE() << e.what();
  }
  for (const auto& s : shapes) {
    for (const auto& [fa, fb] : formats) {
      const auto a = random_codes(s.m * s.k, s.m + s.k, fa);
      const auto b = random_codes(s.n * s.k, s.n * 3 + s.k, fb);
      const float sa = 0.5f, sb = 0.25f;
      std::vector<float> expected(s.m * s.n);
      gemm_tn({a.data(), s.m, fa, sa}, {b.data(), s.n, fb, sb}, s.k, expected.data());
      DeviceBuffer<std::uint8_t> d_a(a), d_b(b);
      DeviceBuffer<float> d_c(s.m * s.n);
      kernels_->gemm_tn_reference(d_a.get(), fa, sa, d_b.get(), fb, sb, s.m, s.n, s.k, d_c.get());
      const std::vector<float> got = d_c.download();
      for (std::size_t i = 0; i < got.size(); ++i) ASSERT_EQ(bits(got[i]), bits(expected[i])) << i;
      if (lt && CublasLtGemm::supports(s.m, s.n, s.k, fa, fb)) {
        DeviceBuffer<float> d_sa(std::vector<float>{sa}), d_sb(std::vector<float>{sb});
        DeviceBuffer<float> d_lt(s.m * s.n);
        lt->gemm_tn(d_a.get(), fa, d_sa.get(), d_b.get(), fb, d_sb.get(), s.m, s.n, s.k, d_lt.get());
        const std::vector<float> fast = d_lt.download();
        for (std::size_t i = 0; i < s.m; ++i) {
          for (std::size_t j = 0; j < s.n; ++j) {
            double sum_abs = 0;
            for (std::size_t p = 0; p < s.k; ++p) {
              sum_abs += std::fabs(static_cast<double>(from_fp8(a[i * s.k + p], fa)) * from_fp8(b[j * s.k + p], fb));
            }
            const double tolerance = 2.0 * static_cast<double>(s.k + 2) * std::ldexp(1.0, -24) * sum_abs * sa * sb;
            EXPECT_NEAR(fast[i * s.n + j], expected[i * s.n + j], tolerance) << i << "," << j;
          }
        }
      }
    }
  }
}

TEST_F(CudaKernelsTest, FusedAndUnfusedUpdatesOfManyTensorsInOneLaunch) {
  for (UpdatePath path : {UpdatePath::Fused, UpdatePath::Unfused}) {
    for (AmaxComputeAlgo algo : {AmaxComputeAlgo::Max, AmaxComputeAlgo::MostRecent}) {
      const std::size_t tensors = 64, length = 16;
      std::mt19937_64 random(11);
      std::vector<ScalingMeta> metas;
      for (std::size_t t = 0; t < tensors; ++t) {
        ScalingMeta m = ScalingMeta::fresh(length, 1 + t % 3);
        for (float& h : m.amax_history) h = static_cast<float>(random() % 1000) / 100.0f;
        m.amax(0, 0) = t % 7 == 0 ? 0.0f : m.amax(0, 0);  // a zero current amax
        if (t == 5) m.amax(3, 0) = std::numeric_limits<float>::quiet_NaN();
        metas.push_back(m);
      }
      std::vector<ScalingMeta> expected = metas;
      std::vector<ScalingMeta*> pointers;
      for (auto& m : expected) pointers.push_back(&m);
      std::vector<float> reduced = current_amaxes(pointers);
      reduced[4] = std::numeric_limits<float>::infinity();
      const ScaleUpdateRecipe recipe{Format::E4M3, 1, algo, path};
      update_scales(pointers, reduced, recipe);

      std::vector<std::unique_ptr<DeviceBuffer<float>>> histories, scales;
      std::vector<float*> history_pointers, scale_pointers;
      std::vector<unsigned> slot_begin = {0};
      for (const ScalingMeta& m : metas) {
        histories.push_back(std::make_unique<DeviceBuffer<float>>(m.amax_history));
        scales.push_back(std::make_unique<DeviceBuffer<float>>(m.scale));
        history_pointers.push_back(histories.back()->get());
        scale_pointers.push_back(scales.back()->get());
        slot_begin.push_back(slot_begin.back() + static_cast<unsigned>(m.slots()));
      }
      DeviceBuffer<float*> d_histories(history_pointers), d_scales(scale_pointers);
      DeviceBuffer<float> d_reduced(reduced);
      DeviceBuffer<unsigned> d_begin(slot_begin);
      kernels_->scale_update(d_histories.get(), d_scales.get(), d_reduced.get(), d_begin.get(),
                             static_cast<unsigned>(tensors), slot_begin.back(), static_cast<unsigned>(length), recipe);
      for (std::size_t t = 0; t < tensors; ++t) {
        const auto h = histories[t]->download();
        const auto s = scales[t]->download();
        for (std::size_t i = 0; i < h.size(); ++i) EXPECT_EQ(bits(h[i]), bits(expected[t].amax_history[i])) << t << " " << i;
        for (std::size_t i = 0; i < s.size(); ++i) EXPECT_EQ(bits(s[i]), bits(expected[t].scale[i])) << t << " " << i;
      }
    }
  }
}

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
      CudaKernels kernels(compiler);
      ADD_FAILURE() << "CudaKernels started without a usable GPU";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(status.why), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace fp8sm::kernels::cuda
