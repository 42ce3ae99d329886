// What the kernel sources of kernels/cuda/ use of CUDA C++, defined for the host, so that they
// compile with the host compiler unchanged and run under run_grid (emulated_grid.hpp). Include
// this, then the .cu files, in one translation unit (emulated_programs.cpp) and nowhere else:
// it defines macros named as CUDA's built-ins. Compile that unit without floating-point
// contraction (-ffp-contract=off): every __f*_rn is one correctly rounded float operation, as
// on the GPU.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernels/cuda/host_emulation/emulated_grid.hpp"

#define __global__
#define __device__
#define __forceinline__ inline
// One copy per host thread, shared by the fibers of the block being run.
#define __shared__ static thread_local

#define threadIdx (::fp8sm::kernels::cuda::emulation::thread_index())
#define blockIdx (::fp8sm::kernels::cuda::emulation::block_index())
#define blockDim (::fp8sm::kernels::cuda::emulation::block_dim())
#define gridDim (::fp8sm::kernels::cuda::emulation::grid_dim())

// Barriers and shuffles carry their place in the source, so that the emulation can tell
// threads at the same one from threads at different ones.
#define FP8SM_EMULATION_STRING(x) #x
#define FP8SM_EMULATION_SITE(line) __FILE__ ":" FP8SM_EMULATION_STRING(line)
#define __syncthreads() ::fp8sm::kernels::cuda::emulation::sync_block(FP8SM_EMULATION_SITE(__LINE__))
#define __syncwarp() ::fp8sm::kernels::cuda::emulation::sync_warp(FP8SM_EMULATION_SITE(__LINE__))
#define __shfl_down_sync(mask, value, delta) fp8sm_emulated_shfl_down(mask, value, delta, FP8SM_EMULATION_SITE(__LINE__))

template <class T>
T fp8sm_emulated_shfl_down(unsigned mask, T value, unsigned delta, const char* site) {
  static_assert(sizeof(T) <= sizeof(std::uint64_t), "a shuffle moves at most 64 bits");
  std::uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof value);
  bits = ::fp8sm::kernels::cuda::emulation::shuffle_down(mask, bits, delta, site);
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

// Blocks run one at a time on one host thread, so a plain read-modify-write is atomic here.
inline int atomicMax(int* address, int value) {
  const int old = *address;
  if (value > old) *address = value;
  return old;
}

inline unsigned __float_as_uint(float f) {
  unsigned u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
inline float __uint_as_float(unsigned u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
inline float __int_as_float(int i) {
  float f;
  std::memcpy(&f, &i, sizeof f);
  return f;
}
// A GPU's float arithmetic returns one canonical NaN (0x7FFFFFFF) whatever the operands' NaNs;
// the host's keeps an operand's sign and payload. Modelled, so that a kernel that lets a NaN's
// sign through an operation fails here as it would on the GPU.
inline float fp8sm_emulated_gpu_nan(float result) { return result != result ? __uint_as_float(0x7FFFFFFFu) : result; }
inline float __fmul_rn(float a, float b) { return fp8sm_emulated_gpu_nan(a * b); }
inline float __fadd_rn(float a, float b) { return fp8sm_emulated_gpu_nan(a + b); }
inline float __fsub_rn(float a, float b) { return fp8sm_emulated_gpu_nan(a - b); }
inline float __fdiv_rn(float a, float b) { return fp8sm_emulated_gpu_nan(a / b); }

// fmaxf and ldexpf are the C library's (<cmath> brings them into the global namespace).
using std::isfinite;
using std::isinf;
using std::isnan;
