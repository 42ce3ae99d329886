#include "kernels/portable_math.hpp"

#include <cstdint>
#include <cstring>

namespace fp8sm::kernels {

namespace {

std::uint32_t float_bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

float bits_float(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

#define FP8SM_MATH_FN inline
#define fp8sm_float_bits float_bits
#define fp8sm_bits_float bits_float
#include "kernels/cuda/portable_math.cuh"
#undef fp8sm_float_bits
#undef fp8sm_bits_float
#undef FP8SM_MATH_FN

}  // namespace

float portable_exp(float x) { return fp8sm_expf(x); }
float portable_log(float x) { return fp8sm_logf(x); }
float portable_erf(float x) { return fp8sm_erff(x); }

}  // namespace fp8sm::kernels
