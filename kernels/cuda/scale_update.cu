// The amax-history/scale update of one registry key (kernels/scale_update.cpp, spec §6 steps
// 3 and 4), every tensor of the key in one launch: one thread per slot of all tensors
// together. Tensor t's history is L x slots_t row-major at histories[t] (row 0 current), its
// scales at scales[t]; reduced[] holds the key's amaxes in tensor order, and slot_begin[t] the
// index of tensor t's first slot there (slot_begin[tensors] = the total).
#include "fp8_device.cuh"

#define FP8SM_FLT_MAX 3.402823466e+38f

__device__ __forceinline__ bool fp8sm_usable(float amax) { return isfinite(amax) && amax > 0.0f; }

extern "C" __global__ void fp8sm_scale_update(float* const* histories, float* const* scales, const float* reduced,
                                              const unsigned* slot_begin, unsigned tensors, unsigned history_length,
                                              float fp8_max, float scaled_max, float margin_divisor,
                                              int most_recent, int unfused) {
  const unsigned index = blockIdx.x * blockDim.x + threadIdx.x;
  if (index >= slot_begin[tensors]) return;
  unsigned lo = 0, hi = tensors;  // the tensor whose slots hold `index`: slot_begin[t] <= index < slot_begin[t+1]
  while (hi - lo > 1) {
    const unsigned mid = (lo + hi) / 2;
    if (slot_begin[mid] <= index) lo = mid; else hi = mid;
  }
  const unsigned t = lo;
  const unsigned slots = slot_begin[t + 1] - slot_begin[t];
  const unsigned slot = index - slot_begin[t];
  float* h = histories[t] + slot;  // row r at h[r * slots]
  const unsigned L = history_length;
  const float r = reduced[index];
  const float previous = scales[t][slot];
  float scale;
  if (!unfused) {
    const float last = r != 0.0f ? r : h[0];  // NaN != 0
    float amax = 0.0f;
    if (last != 0.0f) {
      amax = last;
      for (unsigned row = 1; row < L; ++row) amax = fmaxf(amax, h[row * slots]);
      for (unsigned row = 1; row + 1 < L; ++row) h[row * slots] = h[(row + 1) * slots];
      h[(L - 1) * slots] = last;
      h[0] = 0.0f;
    }
    if (most_recent) amax = last;
    scale = fp8sm_usable(amax) ? __fdiv_rn(scaled_max, amax) : previous;
    if (scale == __int_as_float(0x7F800000)) scale = FP8SM_FLT_MAX;
  } else {
    h[0] = r;
    float amax = h[0];
    if (!most_recent) {
      for (unsigned row = 1; row < L; ++row) {
        const float v = h[row * slots];
        if (isnan(amax) || isnan(v)) { amax = __int_as_float(0x7FC00000); break; }
        if (v > amax) amax = v;
      }
    }
    const float newest = h[0];
    for (unsigned row = 1; row + 1 < L; ++row) h[row * slots] = h[(row + 1) * slots];
    h[(L - 1) * slots] = newest;
    h[0] = 0.0f;
    scale = fp8sm_usable(amax) ? __fdiv_rn(__fdiv_rn(fp8_max, amax), margin_divisor) : previous;
    if (isinf(scale)) scale = FP8SM_FLT_MAX;
  }
  scales[t][slot] = scale;
}
