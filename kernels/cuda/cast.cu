// Cast with amax: out[i] = fp8(in[i] * scale), amax := max(amax, max |in[i]|) (kernels/cast.cpp).
// Grid-stride; one atomicMax per warp. Entry points: fp8sm_cast_<input>_<format>.
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
