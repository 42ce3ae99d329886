// exp, log and erf in float computed the same way on the host and in the CUDA kernels
// (kernels/cuda/portable_math.cuh: basic IEEE float operations only), so that the CPU reference
// of the transformer's layers and their kernels agree bit for bit. Within 2 ulps of the exact
// value (exp, log) and 2e-7 (erf) where the result is normal (tests/kernels/test_layer_math.cpp).
#pragma once

namespace fp8sm::kernels {

float portable_exp(float x);
float portable_log(float x);
float portable_erf(float x);

}  // namespace fp8sm::kernels
