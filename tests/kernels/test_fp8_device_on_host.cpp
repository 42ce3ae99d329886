// The device FP8 conversions of kernels/cuda/fp8_device.cuh, compiled for the host with the
// intrinsics of the host emulation (cuda_on_host.hpp), against the CPU reference (kernels/fp8.cpp): the GPU
// kernels' codes come from this code, so this is where a difference would start. 16.8 million
// evenly spread bit patterns and every pattern within 512 ulps of each FP8 value and of each
// midpoint between neighbours, both formats, both signs; and every code back to float.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernels/amax.hpp"
#include "kernels/fp8.hpp"

#include "kernels/cuda/host_emulation/cuda_on_host.hpp"
#include "kernels/cuda/fp8_device.cuh"

namespace fp8sm::kernels {
namespace {

template <int DeviceFormat>
void expect_same_codes(Format format) {
  std::uint64_t checked = 0;
  auto check = [&](std::uint32_t bits) {
    const float x = __uint_as_float(bits);
    const std::uint8_t device = fp8sm_to_fp8_software<DeviceFormat>(x);
    const std::uint8_t host = to_fp8(x, format);
    ++checked;
    if (device != host) {
      ADD_FAILURE() << format_name(format) << " bits 0x" << std::hex << bits << ": device 0x" << int{device}
                    << ", reference 0x" << int{host};
      return false;
    }
    return true;
  };
  for (std::uint64_t bits = 0; bits <= 0xFFFFFFFFull; bits += 256) {
    if (!check(static_cast<std::uint32_t>(bits))) return;
  }
  for (int code = 0; code < 256; ++code) {
    const float value = from_fp8(static_cast<std::uint8_t>(code), format);
    const float next = from_fp8(static_cast<std::uint8_t>(code + 1), format);
    for (float centre : {value, 0.5f * (value + next)}) {  // the midpoint is exact in float
      if (!std::isfinite(centre)) continue;
      const auto c = static_cast<std::int64_t>(__float_as_uint(centre));
      for (std::int64_t d = -512; d <= 512; ++d) {
        if (c + d < 0 || c + d > 0xFFFFFFFFll) continue;
        if (!check(static_cast<std::uint32_t>(c + d))) return;
      }
    }
  }
  for (std::uint8_t code = 0;; ++code) {
    const float device = fp8sm_from_fp8<DeviceFormat>(code);
    const float host = from_fp8(code, format);
    EXPECT_EQ(__float_as_uint(device), __float_as_uint(host)) << format_name(format) << " code " << int{code};
    if (code == 255) break;
  }
  EXPECT_GT(checked, 16000000u);
}

TEST(Fp8DeviceOnHost, E4M3CodesAreTheReferences) { expect_same_codes<FP8SM_E4M3>(Format::E4M3); }
TEST(Fp8DeviceOnHost, E5M2CodesAreTheReferences) { expect_same_codes<FP8SM_E5M2>(Format::E5M2); }

TEST(Fp8DeviceOnHost, AmaxKeyOrdersAsTheReference) {
  // atomicMax on the keys must pick what kernels::amax_fold picks.
  const float values[] = {0.0f, -0.0f, 1.0f, -2.0f, 3e38f, INFINITY, -INFINITY, NAN, 1e-45f};
  for (float a : values) {
    for (float b : values) {
      const int key = std::max(fp8sm_amax_key(a), fp8sm_amax_key(b));
      const float folded = amax_fold(amax_fold(0.0f, a), b);
      EXPECT_EQ(static_cast<unsigned>(key), __float_as_uint(folded)) << a << " " << b;
    }
  }
}

}  // namespace
}  // namespace fp8sm::kernels
