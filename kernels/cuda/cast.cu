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

template <typename In, int Format>
__device__ void fp8sm_cast_vec(const In* __restrict__ in_values, unsigned long long count, float scale,
                               fp8sm_u8* __restrict__ out_codes, float* amax) {
  typedef typename fp8sm_four<In>::type Four;
  const Four* in = reinterpret_cast<const Four*>(in_values);
  fp8sm_u32* out = reinterpret_cast<fp8sm_u32*>(out_codes);
  const unsigned long long groups = count / 4;  // count % 4 == 0
  int key = 0;
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  for (unsigned long long g = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; g < groups; g += stride) {
    out[g] = fp8sm_cast_four<Format>(in[g], scale, key);
  }
  key = fp8sm_warp_max(key);
  if ((threadIdx.x & 31) == 0 && key != 0) atomicMax((int*)amax, key);
}

// The entry points: float32 or bf16 input x E4M3 or E5M2, for each kernel.
// The scale is read on the device; scale_inv (may be null) gets 1 / scale.
#define FP8SM_CAST_ENTRY(NAME, KERNEL, IN, FORMAT)                                                     \
  extern "C" __global__ void NAME(const IN* in, unsigned long long n, const float* scale, fp8sm_u8* out, \
                                  float* amax, float* scale_inv) {                                       \
    const float s = *scale;                                                                              \
    fp8sm_write_scale_inv(s, scale_inv);                                                                 \
    KERNEL<IN, FORMAT>(in, n, s, out, amax);                                                             \
  }
FP8SM_ENTRY_POINTS(FP8SM_CAST_ENTRY, fp8sm_cast, fp8sm_cast)
FP8SM_ENTRY_POINTS(FP8SM_CAST_ENTRY, fp8sm_cast_vec, fp8sm_cast_vec)
