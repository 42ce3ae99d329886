// torch.nn.LayerNorm over the features of each row, in fp32 (TE's LayerNorm is not an FP8
// module: it has no scaling metadata and fires no table event), on the context's backend (its
// parameters live there). Its node keeps the input and each row's mean and reciprocal
// deviation; gamma's and beta's gradients accumulate here.
#pragma once

#include <cstddef>
#include <string>

#include "runtime/backend.hpp"
#include "runtime/context.hpp"

namespace fp8sm::runtime {

class LayerNorm {
 public:
  // gamma ones, beta zeros.
  LayerNorm(Context& context, std::string name, std::size_t features, float eps = 1e-5f);

  // x: rows x features. Throws std::invalid_argument for a wrong shape or a NaN/infinity.
  Tensor forward(const Tensor& x);

  const std::string& name() const { return name_; }
  Matrix& gamma() { return gamma_; }  // 1 x features
  Matrix& beta() { return beta_; }
  Matrix& gamma_grad() { return gamma_grad_; }
  Matrix& beta_grad() { return beta_grad_; }
  float eps() const { return eps_; }

 private:
  friend class LayerNormNode;
  Context& context_;
  std::string name_;
  float eps_;
  Matrix gamma_, beta_, gamma_grad_, beta_grad_;
};

// The normalisation itself (what LayerNorm and LayerNormLinear share): y, and what the backward
// needs; the backward of y's gradient into x's, gamma's and beta's (added).
struct NormSaved {
  Matrix input, mean, rstd;
};
Matrix layer_norm(Backend& backend, const Matrix& x, const Matrix& gamma, const Matrix& beta, float eps,
                  NormSaved& saved);
Matrix layer_norm_backward(Backend& backend, const NormSaved& saved, const Matrix& grad_output, const Matrix& gamma,
                           Matrix& gamma_grad, Matrix& beta_grad);

}  // namespace fp8sm::runtime
