// exp, log and erf in float from +, -, *, / and bit operations alone, so that the CPU reference
// (kernels/layer_math.cpp) and the CUDA kernels (layers.cu) compute them to the same bits: the
// C library's expf and CUDA's differ by an ulp here and there, which would part a GPU training
// from the CPU's. Every operation is one IEEE float operation, rounded once (no contraction:
// NVRTC compiles with --fmad=false, the host files that include this with -ffp-contract=off).
// Accuracy, measured against double (tests/kernels/test_layer_math.cpp): exp and log within 2
// ulps, erf within 2e-7 (and 4 ulps below 0.5).
//
// The includer defines FP8SM_MATH_FN (the functions' qualifiers) and fp8sm_float_bits /
// fp8sm_bits_float (a float's bits and back): layers.cu for the device (and the host
// emulation), layer_math.cpp for the host.
#ifndef FP8SM_PORTABLE_MATH_CUH
#define FP8SM_PORTABLE_MATH_CUH

FP8SM_MATH_FN float fp8sm_pow2(int n) {  // 2^n, n in [-126, 127]
  return fp8sm_bits_float((unsigned)(n + 127) << 23);
}

FP8SM_MATH_FN float fp8sm_expf(float x) {
  if (x != x) return x;
  if (x > 88.72283935546875f) return fp8sm_bits_float(0x7F800000u);
  if (x < -103.97208404541015625f) return 0.0f;
  // x = n ln2 + r, |r| <= ln2 / 2; ln2's high part has 8 trailing zero bits, so n * high is exact.
  const float t = x * 1.44269504088896341f;
  const int n = (int)(t >= 0.0f ? t + 0.5f : t - 0.5f);
  const float r = (x - (float)n * 0.693145751953125f) - (float)n * 1.4286068203094172e-06f;
  // e^r: Taylor to r^7 (the next term is below 5e-9 of the result).
  float p = 1.0f / 5040.0f;
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  // 2^n in two factors: n runs from -150 to 128.
  const int half = n / 2;
  return p * fp8sm_pow2(half) * fp8sm_pow2(n - half);
}

FP8SM_MATH_FN float fp8sm_logf(float x) {
  if (x != x) return x;
  if (x < 0.0f) return fp8sm_bits_float(0x7FC00000u);
  if (x == 0.0f) return fp8sm_bits_float(0xFF800000u);
  if (x == fp8sm_bits_float(0x7F800000u)) return x;
  int e = 0;
  if (x < 1.17549435e-38f) {  // subnormal: scaled into the normal range first
    x = x * 8388608.0f;
    e = -23;
  }
  const unsigned bits = fp8sm_float_bits(x);
  e += (int)(bits >> 23) - 127;
  float m = fp8sm_bits_float((bits & 0x007FFFFFu) | 0x3F800000u);  // [1, 2)
  if (m > 1.41421356f) {
    m = m * 0.5f;
    e += 1;
  }
  // log m = 2 atanh s, s = (m - 1) / (m + 1), |s| <= 0.172: the series to s^11.
  const float s = (m - 1.0f) / (m + 1.0f);
  const float s2 = s * s;
  float p = 1.0f / 11.0f;
  p = p * s2 + 1.0f / 9.0f;
  p = p * s2 + 1.0f / 7.0f;
  p = p * s2 + 1.0f / 5.0f;
  p = p * s2 + 1.0f / 3.0f;
  const float log_m = 2.0f * s + 2.0f * s * (s2 * p);
  return (float)e * 0.693145751953125f + ((float)e * 1.4286068203094172e-06f + log_m);
}

// erf: near 0 its Taylor series (to x^13: the next term is below 2e-9 of it at |x| = 0.5), else
// through erfc's Chebyshev fit (Numerical Recipes' erfcc: fractional error below 1.2e-7).
FP8SM_MATH_FN float fp8sm_erff(float x) {
  if (x != x) return x;
  const float z = x < 0.0f ? -x : x;
  if (z < 0.5f) {
    const float x2 = x * x;
    float p = -1.0f / 75600.0f;
    p = p * x2 + 1.0f / 9360.0f;
    p = p * x2 - 1.0f / 1320.0f;
    p = p * x2 + 1.0f / 216.0f;
    p = p * x2 - 1.0f / 42.0f;
    p = p * x2 + 1.0f / 10.0f;
    p = p * x2 - 1.0f / 3.0f;
    p = p * x2 + 1.0f;
    return 1.12837916709551257f * (x * p);  // 2 / sqrt(pi)
  }
  const float t = 1.0f / (1.0f + 0.5f * z);
  float p = 0.17087277f;
  p = p * t - 0.82215223f;
  p = p * t + 1.48851587f;
  p = p * t - 1.13520398f;
  p = p * t + 0.27886807f;
  p = p * t - 0.18628806f;
  p = p * t + 0.09678418f;
  p = p * t + 0.37409196f;
  p = p * t + 1.00002368f;
  p = p * t - 1.26551223f;
  const float erfc = t * fp8sm_expf(-z * z + p);
  return x >= 0.0f ? 1.0f - erfc : erfc - 1.0f;
}

#endif  // FP8SM_PORTABLE_MATH_CUH
