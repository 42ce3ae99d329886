// Device twins of kernels/fp8.cpp and kernels/amax.cpp: the same integer steps, so that every
// code and every amax the GPU produces is the CPU reference's, bit for bit. Compiled by NVRTC
// as a header of the kernel sources (no CUDA header needed: bf16 travels as its 16 bits).
#pragma once

typedef unsigned int fp8sm_u32;
typedef unsigned short fp8sm_u16;
typedef unsigned char fp8sm_u8;

#define FP8SM_E4M3 0
#define FP8SM_E5M2 1

// value / 2^shift rounded to nearest, ties to even (value < 2^31, shift >= 1).
__device__ __forceinline__ fp8sm_u32 fp8sm_shift_right_nearest_even(fp8sm_u32 value, int shift) {
  if (shift >= 32) return 0u;
  const fp8sm_u32 kept = value >> shift;
  const fp8sm_u32 dropped = value & ((1u << shift) - 1u);
  const fp8sm_u32 half = 1u << (shift - 1);
  const bool round_up = dropped > half || (dropped == half && (kept & 1u) != 0u);
  return round_up ? kept + 1u : kept;
}

// Round to nearest even, saturate to +-max (infinity included), NaN -> 0x7F with its sign.
template <int Format>
__device__ __forceinline__ fp8sm_u8 fp8sm_to_fp8(float value) {
  const int mantissa_bits = Format == FP8SM_E4M3 ? 3 : 2;
  const int bias = Format == FP8SM_E4M3 ? 7 : 15;
  const fp8sm_u32 max_code = Format == FP8SM_E4M3 ? 0x7Eu : 0x7Bu;
  const fp8sm_u32 bits = __float_as_uint(value);
  const fp8sm_u32 sign = (bits >> 24) & 0x80u;
  const fp8sm_u32 magnitude = bits & 0x7FFFFFFFu;
  if (magnitude > 0x7F800000u) return (fp8sm_u8)(sign | 0x7Fu);
  const int mantissa_shift = 23 - mantissa_bits;
  const int min_normal_field = 127 + 1 - bias;
  const int exponent_field = (int)(magnitude >> 23);
  fp8sm_u32 code;
  if (exponent_field >= min_normal_field) {
    code = fp8sm_shift_right_nearest_even(magnitude, mantissa_shift) - ((fp8sm_u32)(127 - bias) << mantissa_bits);
  } else {
    const fp8sm_u32 fraction = magnitude & 0x7FFFFFu;
    const fp8sm_u32 significand = exponent_field == 0 ? fraction : (fraction | 0x800000u);
    const int shift = mantissa_shift + min_normal_field - (exponent_field > 1 ? exponent_field : 1);
    code = fp8sm_shift_right_nearest_even(significand, shift);
  }
  code = code < max_code ? code : max_code;
  return (fp8sm_u8)(sign | code);
}

template <int Format>
__device__ __forceinline__ float fp8sm_from_fp8(fp8sm_u8 code) {
  const int mantissa_bits = Format == FP8SM_E4M3 ? 3 : 2;
  const int bias = Format == FP8SM_E4M3 ? 7 : 15;
  const fp8sm_u32 sign = ((fp8sm_u32)code & 0x80u) << 24;
  const fp8sm_u32 magnitude = code & 0x7Fu;
  const fp8sm_u32 exponent_field = magnitude >> mantissa_bits;
  const fp8sm_u32 mantissa = magnitude & ((1u << mantissa_bits) - 1u);
  const bool special = Format == FP8SM_E5M2 ? exponent_field == 0x1Fu : magnitude == 0x7Fu;
  if (special) {
    const bool infinity = Format == FP8SM_E5M2 && mantissa == 0u;
    return __uint_as_float(sign | (infinity ? 0x7F800000u : 0x7FC00000u));
  }
  if (exponent_field == 0u) {
    // mantissa x 2^(1 - bias - mantissa_bits): exact in float
    return __uint_as_float(sign | __float_as_uint(ldexpf((float)mantissa, 1 - bias - mantissa_bits)));
  }
  return __uint_as_float(sign | ((exponent_field + (fp8sm_u32)(127 - bias)) << 23) | (mantissa << (23 - mantissa_bits)));
}

__device__ __forceinline__ float fp8sm_widen(float x) { return x; }
__device__ __forceinline__ float fp8sm_widen(fp8sm_u16 bf16) { return __uint_as_float((fp8sm_u32)bf16 << 16); }

// The amax order of kernels/amax.cpp: |x| as a bit pattern, compared as a signed integer with
// the accumulator (so NaN, above infinity, wins). Accumulated with atomicMax on those bits.
__device__ __forceinline__ int fp8sm_amax_key(float x) { return (int)(__float_as_uint(x) & 0x7FFFFFFFu); }

__device__ __forceinline__ int fp8sm_warp_max(int value) {
  for (int offset = 16; offset > 0; offset >>= 1) {
    const int other = __shfl_down_sync(0xFFFFFFFFu, value, offset);
    value = other > value ? other : value;
  }
  return value;
}
