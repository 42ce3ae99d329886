// The amax-history/scale update of one registry key (kernels/scale_update.cpp, spec §6 steps
// 3 and 4), every tensor of the key in one launch. Tensor t's history is L x slots_t row-major
// at histories[t] (row 0 current), its scales at scales[t]; reduced[] holds the key's amaxes in
// tensor order, and slot_begin[t] the index of tensor t's first slot there (slot_begin[tensors]
// = the total).
//
// One warp per slot: the lanes take the history rows 32 apart, so a slot's L loads are in flight
// together rather than one after another (L is 1024 by default in TE). Each pass of up to 32 x
// 32 rows is read whole before any of it is written, so the roll (row r - 1 := row r) never
// reads a row already overwritten. The maximum over the history is order-free (fmaxf, or the
// unfused path's NaN-propagating max), so the warp's order gives the reference's scale.
#include "fp8_device.cuh"

#define FP8SM_FLT_MAX 3.402823466e+38f
#define FP8SM_WARP 32
#define FP8SM_ROWS_PER_LANE 32  // rows a lane holds in one pass

__device__ __forceinline__ bool fp8sm_usable(float amax) { return isfinite(amax) && amax > 0.0f; }
__device__ __forceinline__ float fp8sm_nan() { return __int_as_float(0x7FC00000); }

// The maximum over the history: the unfused path's is NaN if either is NaN; the fused path's is
// fmaxf, which ignores NaN.
__device__ __forceinline__ float fp8sm_history_max(int unfused, float a, float b) {
  if (!unfused) return fmaxf(a, b);
  if (isnan(a) || isnan(b)) return fp8sm_nan();
  return b > a ? b : a;
}

extern "C" __global__ void fp8sm_scale_update(float* const* histories, float* const* scales, const float* reduced,
                                              const unsigned* slot_begin, unsigned tensors, unsigned history_length,
                                              float fp8_max, float scaled_max, float margin_divisor,
                                              int most_recent, int unfused) {
  const unsigned index = (blockIdx.x * blockDim.x + threadIdx.x) / FP8SM_WARP;  // the slot of this warp
  const unsigned lane = threadIdx.x % FP8SM_WARP;
  if (index >= slot_begin[tensors]) return;  // the whole warp: blockDim.x is a multiple of 32
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

  // Fused: the newest amax is the reduced one, or the history's current one where that is 0,
  // and a zero newest amax leaves the history as it is. Unfused: always the reduced one, always
  // rolled. Lane 0 starts the maximum with it; fmaxf ignores NaN, so NaN is its identity.
  const float last = unfused ? r : (r != 0.0f ? r : h[0]);  // NaN != 0
  const bool roll = unfused || last != 0.0f;
  float amax = unfused ? (lane == 0 ? r : -__int_as_float(0x7F800000)) : (lane == 0 ? last : fp8sm_nan());
  if (roll) {
    for (unsigned first = 1; first < L; first += FP8SM_WARP * FP8SM_ROWS_PER_LANE) {
      float held[FP8SM_ROWS_PER_LANE];
      FP8SM_UNROLL
      for (unsigned k = 0; k < FP8SM_ROWS_PER_LANE; ++k) {  // the loads first, all in flight
        const unsigned row = first + lane + k * FP8SM_WARP;
        if (row < L) held[k] = h[row * slots];
      }
      FP8SM_UNROLL
      for (unsigned k = 0; k < FP8SM_ROWS_PER_LANE; ++k) {
        if (first + lane + k * FP8SM_WARP < L) {
          amax = fp8sm_history_max(unfused, amax, held[k]);
        }
      }
      __syncwarp();  // every lane has read this pass before any writes into it
      FP8SM_UNROLL
      for (unsigned k = 0; k < FP8SM_ROWS_PER_LANE; ++k) {
        const unsigned row = first + lane + k * FP8SM_WARP;
        if (row >= 2 && row < L) h[(row - 1) * slots] = held[k];  // rows 1 .. L-2 move up
      }
    }
    for (int offset = 16; offset > 0; offset >>= 1) {
      const float other = __shfl_down_sync(0xFFFFFFFFu, amax, offset);
      amax = fp8sm_history_max(unfused, amax, other);
    }
  }
  if (lane != 0) return;
  if (roll) {
    h[(L - 1) * slots] = last;  // L == 1: row 0 is the last row, and then the current one
    h[0] = 0.0f;
  } else {
    amax = 0.0f;
  }
  if (most_recent) amax = last;
  float scale;
  if (!unfused) {
    scale = fp8sm_usable(amax) ? __fdiv_rn(scaled_max, amax) : previous;
    if (scale == __int_as_float(0x7F800000)) scale = FP8SM_FLT_MAX;
  } else {
    scale = fp8sm_usable(amax) ? __fdiv_rn(__fdiv_rn(fp8_max, amax), margin_divisor) : previous;
    if (isinf(scale)) scale = FP8SM_FLT_MAX;
  }
  scales[t][slot] = scale;
}

// The current amaxes (row 0) of a key's histories, gathered in tensor order (what the key's
// reduction reads): amaxes[slot_begin[t] + s] = histories[t][s]. One thread per slot.
extern "C" __global__ void fp8sm_gather_amaxes(float* const* histories, const unsigned* slot_begin, unsigned tensors,
                                               float* amaxes) {
  const unsigned index = blockIdx.x * blockDim.x + threadIdx.x;
  if (index >= slot_begin[tensors]) return;
  unsigned lo = 0, hi = tensors;
  while (hi - lo > 1) {
    const unsigned mid = (lo + hi) / 2;
    if (slot_begin[mid] <= index) lo = mid; else hi = mid;
  }
  amaxes[index] = histories[lo][index - slot_begin[lo]];
}

// The amaxes of a key as the integer keys a reduction takes their maximum of, in place, and back
// (runtime/amax_order.hpp: a NaN's sign cleared, negative floats below +0 in numeric order), so
// that an integer MAX across ranks (ncclMax over ncclInt32) orders them as one process's amax
// fold does. One thread per amax.
extern "C" __global__ void fp8sm_amax_to_order_keys(float* amaxes, unsigned count) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= count) return;
  unsigned bits = __float_as_uint(amaxes[i]);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) bits &= 0x7FFFFFFFu;  // NaN: its magnitude
  if ((bits & 0x80000000u) != 0) bits ^= 0x7FFFFFFFu;           // negative: below +0, in order
  amaxes[i] = __uint_as_float(bits);                               // the key's bits, as an int32
}

extern "C" __global__ void fp8sm_amax_from_order_keys(float* keys, unsigned count) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= count) return;
  unsigned bits = __float_as_uint(keys[i]);
  if ((bits & 0x80000000u) != 0) bits ^= 0x7FFFFFFFu;
  keys[i] = __uint_as_float(bits);
}
