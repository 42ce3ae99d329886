// Dequantize (kernels/dequantize.cpp): out[i] = from_fp8(in[i]) * scale_inv. Grid-stride.
#include "fp8_device.cuh"

template <int Format>
__device__ void fp8sm_dequantize(const fp8sm_u8* in, unsigned long long count, float scale_inv, float* out) {
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += stride) {
    out[i] = fp8sm_dequantize_value<Format>(in[i], scale_inv);
  }
}

extern "C" __global__ void fp8sm_dequantize_e4m3(const fp8sm_u8* in, unsigned long long n, float scale_inv, float* out) {
  fp8sm_dequantize<FP8SM_E4M3>(in, n, scale_inv, out);
}
extern "C" __global__ void fp8sm_dequantize_e5m2(const fp8sm_u8* in, unsigned long long n, float scale_inv, float* out) {
  fp8sm_dequantize<FP8SM_E5M2>(in, n, scale_inv, out);
}
