// Device twins of kernels/fp8.cpp and kernels/amax.cpp: the same integer steps, so that every
// code and every amax the GPU produces is the CPU reference's, bit for bit. Compiled by NVRTC
// as a header of the kernel sources (no CUDA header needed: bf16 travels as its 16 bits).
#pragma once

typedef unsigned int fp8sm_u32;
typedef unsigned short fp8sm_u16;
typedef unsigned char fp8sm_u8;

#define FP8SM_E4M3 0
#define FP8SM_E5M2 1

// ENTRY(NAME_<input>_<format>, KERNEL, In, Format) for the four entry points of a cast kernel:
// float32 or bf16 input, E4M3 or E5M2 output.
#define FP8SM_ENTRY_POINTS(ENTRY, NAME, KERNEL)            \
  ENTRY(NAME##_f32_e4m3, KERNEL, float, FP8SM_E4M3)      \
  ENTRY(NAME##_f32_e5m2, KERNEL, float, FP8SM_E5M2)      \
  ENTRY(NAME##_bf16_e4m3, KERNEL, fp8sm_u16, FP8SM_E4M3) \
  ENTRY(NAME##_bf16_e5m2, KERNEL, fp8sm_u16, FP8SM_E5M2)

// Unroll the loop that follows where the CUDA compiler reads the kernels (NVRTC, nvcc); nothing
// for the host compiler of the emulation, which would warn about an unknown pragma.
#if defined(__CUDACC_RTC__) || defined(__CUDACC__)
#define FP8SM_UNROLL _Pragma("unroll")
#else
#define FP8SM_UNROLL
#endif

// value / 2^shift rounded to nearest, ties to even (value < 2^31, shift >= 1).
__device__ __forceinline__ fp8sm_u32 fp8sm_shift_right_nearest_even(fp8sm_u32 value, int shift) {
  if (shift >= 32) return 0u;
  const fp8sm_u32 kept = value >> shift;
  const fp8sm_u32 dropped = value & ((1u << shift) - 1u);
  const fp8sm_u32 half = 1u << (shift - 1);
  const bool round_up = dropped > half || (dropped == half && (kept & 1u) != 0u);
  return round_up ? kept + 1u : kept;
}

// Round to nearest even, saturate to +-max (infinity included), NaN -> 0x7F with its sign: the
// integer steps of kernels/fp8.cpp. About 70 integer instructions a value: on a GPU that has
// the conversion in hardware, fp8sm_to_fp8 below uses that instead.
template <int Format>
__device__ __forceinline__ fp8sm_u8 fp8sm_to_fp8_software(float value) {
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

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
// sm_89 and later convert float32 to FP8 in one instruction: round to nearest even, and with
// .satfinite infinities and overflows to +-max, as the reference. Only NaN differs (the
// instruction gives one canonical NaN, the reference keeps the sign): handled before it. Both
// halves of the pair get the value, so which half is which does not matter.
template <int Format>
__device__ __forceinline__ fp8sm_u8 fp8sm_to_fp8_hardware(float value) {
  const fp8sm_u32 bits = __float_as_uint(value);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return (fp8sm_u8)(((bits >> 24) & 0x80u) | 0x7Fu);
  unsigned short pair;
  if (Format == FP8SM_E4M3) {
    asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %1;" : "=h"(pair) : "f"(value));
  } else {
    asm("cvt.rn.satfinite.e5m2x2.f32 %0, %1, %1;" : "=h"(pair) : "f"(value));
  }
  return (fp8sm_u8)(pair & 0xFFu);
}
#endif

// The conversion the kernels use: the hardware's where there is one, else the integer steps.
// The host emulation and the on-host test compile the integer steps; the hardware path is
// checked against the reference by the GPU tests (every code, midpoint and special).
template <int Format>
__device__ __forceinline__ fp8sm_u8 fp8sm_to_fp8(float value) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  return fp8sm_to_fp8_hardware<Format>(value);
#else
  return fp8sm_to_fp8_software<Format>(value);
#endif
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

// fp8(x * scale) as the CPU reference computes it: the product rounded once to float, then
// converted. A NaN input goes to the conversion as it is, keeping its sign as the host's
// multiplication keeps it (the GPU's would return its one canonical, positive NaN).
template <int Format>
__device__ __forceinline__ fp8sm_u8 fp8sm_cast_value(float x, float scale) {
  return fp8sm_to_fp8<Format>(x != x ? x : __fmul_rn(x, scale));
}

// 1 / scale (kernels::scale_inverse), written once, by the grid's first thread: the cast kernels
// read their scale on the device and leave the scale_inv that dequantizes what they wrote.
__device__ __forceinline__ void fp8sm_write_scale_inv(float scale, float* scale_inv) {
  if (scale_inv != 0 && blockIdx.x == 0 && blockIdx.y == 0 && threadIdx.x == 0 && threadIdx.y == 0) {
    *scale_inv = __fdiv_rn(1.0f, scale);
  }
}

// from_fp8(code) * scale_inv as the CPU reference computes it; a NaN code gives its NaN as the
// host's multiplication does (sign and payload kept), not the GPU's canonical NaN.
template <int Format>
__device__ __forceinline__ float fp8sm_dequantize_value(fp8sm_u8 code, float scale_inv) {
  const float value = fp8sm_from_fp8<Format>(code);
  return value != value ? value : __fmul_rn(value, scale_inv);
}

// Four consecutive inputs, loaded with one access by the vectorized kernels: 16 bytes of
// float32 or 8 of bf16. fp8sm_four<In>::type is the one for inputs of type In.
struct alignas(16) fp8sm_f32x4 {
  float v[4];
};
struct alignas(8) fp8sm_bf16x4 {
  fp8sm_u16 v[4];
};
template <typename In>
struct fp8sm_four;
template <>
struct fp8sm_four<float> {
  typedef fp8sm_f32x4 type;
};
template <>
struct fp8sm_four<fp8sm_u16> {
  typedef fp8sm_bf16x4 type;
};

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

// The vectorized kernels' step: the codes of 4 consecutive inputs as one little-endian word
// (input i in byte i), and their amax keys folded into `key`.
template <int Format, typename Four>
__device__ __forceinline__ fp8sm_u32 fp8sm_cast_four(const Four& x, float scale, int& key) {
  fp8sm_u32 word = 0;
  FP8SM_UNROLL
  for (int i = 0; i < 4; ++i) {
    const float value = fp8sm_widen(x.v[i]);
    word |= (fp8sm_u32)fp8sm_cast_value<Format>(value, scale) << (8 * i);
    const int k = fp8sm_amax_key(value);
    key = k > key ? k : key;
  }
  return word;
}
