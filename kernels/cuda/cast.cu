// Cast with amax: out[i] = fp8(in[i] * scale), amax := max(amax, max |in[i]|) (kernels/cast.cpp).
// Grid-stride; one atomicMax per warp.
// fp8sm_cast_<input>_<format>: any count, one value per thread and step.
// fp8sm_cast_vec_<input>_<format>: count a multiple of 4, `in` and `out` aligned for 4 values
// (Device::cast checks): 4 values per thread and step, one 16-byte (f32) or 8-byte (bf16) load
// and one 4-byte store.
#include "fp8_device.cuh"

template <typename In, int Format>
__device__ void fp8sm_cast(const In* in, unsigned long long count, float scale, fp8sm_u8* out, float* amax) {
  int key = 0;
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += stride) {
    const float x = fp8sm_widen(in[i]);
    out[i] = fp8sm_cast_value<Format>(x, scale);
    const int k = fp8sm_amax_key(x);
    key = k > key ? k : key;
  }
  key = fp8sm_warp_max(key);
  if ((threadIdx.x & 31) == 0 && key != 0) atomicMax((int*)amax, key);
}

struct alignas(16) fp8sm_cast_f32x4 {
  float v[4];
};
struct alignas(8) fp8sm_cast_bf16x4 {
  fp8sm_u16 v[4];
};

template <typename Four, int Format>
__device__ void fp8sm_cast_vec(const Four* __restrict__ in, unsigned long long groups, float scale,
                               fp8sm_u32* __restrict__ out, float* amax) {
  int key = 0;
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  for (unsigned long long g = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; g < groups; g += stride) {
    const Four x = in[g];
    fp8sm_u32 word = 0;
    FP8SM_UNROLL
    for (int i = 0; i < 4; ++i) {
      const float value = fp8sm_widen(x.v[i]);
      word |= (fp8sm_u32)fp8sm_cast_value<Format>(value, scale) << (8 * i);
      const int k = fp8sm_amax_key(value);
      key = k > key ? k : key;
    }
    out[g] = word;
  }
  key = fp8sm_warp_max(key);
  if ((threadIdx.x & 31) == 0 && key != 0) atomicMax((int*)amax, key);
}

extern "C" __global__ void fp8sm_cast_f32_e4m3(const float* in, unsigned long long n, float scale, fp8sm_u8* out, float* amax) {
  fp8sm_cast<float, FP8SM_E4M3>(in, n, scale, out, amax);
}
extern "C" __global__ void fp8sm_cast_f32_e5m2(const float* in, unsigned long long n, float scale, fp8sm_u8* out, float* amax) {
  fp8sm_cast<float, FP8SM_E5M2>(in, n, scale, out, amax);
}
extern "C" __global__ void fp8sm_cast_bf16_e4m3(const fp8sm_u16* in, unsigned long long n, float scale, fp8sm_u8* out, float* amax) {
  fp8sm_cast<fp8sm_u16, FP8SM_E4M3>(in, n, scale, out, amax);
}
extern "C" __global__ void fp8sm_cast_bf16_e5m2(const fp8sm_u16* in, unsigned long long n, float scale, fp8sm_u8* out, float* amax) {
  fp8sm_cast<fp8sm_u16, FP8SM_E5M2>(in, n, scale, out, amax);
}
extern "C" __global__ void fp8sm_cast_vec_f32_e4m3(const fp8sm_cast_f32x4* in, unsigned long long groups, float scale,
                                                   fp8sm_u32* out, float* amax) {
  fp8sm_cast_vec<fp8sm_cast_f32x4, FP8SM_E4M3>(in, groups, scale, out, amax);
}
extern "C" __global__ void fp8sm_cast_vec_f32_e5m2(const fp8sm_cast_f32x4* in, unsigned long long groups, float scale,
                                                   fp8sm_u32* out, float* amax) {
  fp8sm_cast_vec<fp8sm_cast_f32x4, FP8SM_E5M2>(in, groups, scale, out, amax);
}
extern "C" __global__ void fp8sm_cast_vec_bf16_e4m3(const fp8sm_cast_bf16x4* in, unsigned long long groups,
                                                    float scale, fp8sm_u32* out, float* amax) {
  fp8sm_cast_vec<fp8sm_cast_bf16x4, FP8SM_E4M3>(in, groups, scale, out, amax);
}
extern "C" __global__ void fp8sm_cast_vec_bf16_e5m2(const fp8sm_cast_bf16x4* in, unsigned long long groups,
                                                    float scale, fp8sm_u32* out, float* amax) {
  fp8sm_cast_vec<fp8sm_cast_bf16x4, FP8SM_E5M2>(in, groups, scale, out, amax);
}
