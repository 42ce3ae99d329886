#include "runtime/fp8_linear.hpp"

#include <fmt/core.h>

#include <cmath>
#include <random>
#include <stdexcept>
#include <utility>

namespace fp8sm::runtime {

LinearParameters::LinearParameters(Backend& backend, std::string module_name, std::size_t in_features,
                                   std::size_t out_features, std::uint64_t seed, const std::string& module)
    : name(std::move(module_name)), shape{out_features, in_features} {
  if (in_features == 0 || out_features == 0) throw std::invalid_argument(fmt::format("{}: a dimension is 0", module));
  value_count(out_features, in_features, module + ": weight");
  Matrix initial(out_features, in_features);
  std::mt19937_64 random(seed);
  const float bound = 1.0f / std::sqrt(static_cast<float>(in_features));
  std::uniform_real_distribution<float> uniform(-bound, bound);
  for (float& w : initial.values) w = uniform(random);
  // Where the backend computes (device memory on a device backend: uploaded once, here).
  weight = backend.to_backend(std::move(initial));
  weight_grad = backend.zeros(out_features, in_features);
}

void LinearParameters::require_forward(const std::string& module) const {
  require_shape(weight, shape, module + ": weight");
  require_finite(weight, module + ": weight");
}

void LinearParameters::require_backward(const std::string& module) const {
  require_shape(weight_grad, shape, module + "'s weight gradient");
}

Matrix linear_forward(Backend& backend, const Recipe& recipe, MetaTensors& forward, const Matrix& x,
                      const Matrix& weight, bool fp8, LinearSaved& saved) {
  saved = LinearSaved(fp8);
  if (!fp8) {
    saved.input = x;
    saved.weight = weight;
    return backend.matmul_nt(x, weight);
  }
  const kernels::Format format = recipe.forward_format();
  saved.input_fp8 = backend.cast_transpose(x, forward, 0, format);
  saved.weight_fp8 = backend.cast_transpose(weight, forward, 1, format);
  // y (m x out) = x (m x in) · Wᵀ: A = x codes (K = in), B = W codes (out x in).
  return backend.gemm_tn(saved.input_fp8, false, saved.weight_fp8, false);
}

Matrix linear_backward(Backend& backend, const Recipe& recipe, MetaTensors& backward, const LinearSaved& saved,
                       const Matrix& grad_output, Matrix& weight_grad) {
  if (!saved.fp8) {
    // dx = dy W, dW += dyᵀ x
    const Matrix dx = backend.matmul_nt(grad_output, backend.transpose(saved.weight));
    backend.add_into(weight_grad, backend.matmul_nt(backend.transpose(grad_output), backend.transpose(saved.input)));
    return dx;
  }
  const Fp8Matrix dy = backend.cast_transpose(grad_output, backward, 0, recipe.backward_format());
  // dx (m x in) = dy (m x out) · W (out x in): A = dy codes (K = out), B = Wᵀ codes (in x out).
  const Matrix dx = backend.gemm_tn(dy, false, saved.weight_fp8, true);
  // dW (out x in) = dyᵀ (out x m) · x (m x in): A = dyᵀ codes (K = m), B = xᵀ codes (in x m).
  backend.add_into(weight_grad, backend.gemm_tn(dy, true, saved.input_fp8, true));
  return dx;
}

}  // namespace fp8sm::runtime
