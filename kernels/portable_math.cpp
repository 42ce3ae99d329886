#include "kernels/portable_math.hpp"

#include "kernels/detail/float_bits.hpp"

namespace fp8sm::kernels {

namespace {

#define FP8SM_MATH_FN inline
#define fp8sm_float_bits detail::bits_of
#define fp8sm_bits_float detail::float_of
#include "kernels/cuda/portable_math.cuh"
#undef fp8sm_float_bits
#undef fp8sm_bits_float
#undef FP8SM_MATH_FN

}  // namespace

float portable_exp(float x) { return fp8sm_expf(x); }
float portable_log(float x) { return fp8sm_logf(x); }
float portable_erf(float x) { return fp8sm_erff(x); }

}  // namespace fp8sm::kernels
