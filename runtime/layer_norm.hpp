// torch.nn.LayerNorm over the features of each row, in fp32 (TE's LayerNorm is not an FP8
// module: it has no scaling metadata and fires no table event), on the context's backend (its
// parameters live there). Its node keeps the input and each row's mean and reciprocal
// deviation; gamma's and beta's gradients accumulate here.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "runtime/backend.hpp"
#include "runtime/context.hpp"
#include "runtime/context_ref.hpp"

namespace fp8sm::runtime {

// A norm's parameters and their gradients, 1 x features each, shared by the module and the
// nodes it records (a graph may be backpropagated after the module object is gone).
struct NormParameters {
  std::size_t features = 0;
  float eps = 1e-5f;
  Matrix gamma, beta, gamma_grad, beta_grad;

  // gamma ones, beta zeros, where `backend` computes. std::invalid_argument naming `module` for
  // no features, too many, or an eps that is not positive.
  NormParameters(Backend& backend, std::size_t features, float eps, const std::string& module);
  // What a forward reads (gamma, beta) and a backward writes (their gradients): each 1 x
  // features (the program may have replaced them), gamma and beta finite.
  void require_forward(const std::string& what) const;
  void require_backward(const std::string& what) const;
};

class LayerNorm {
 public:
  // gamma ones, beta zeros.
  LayerNorm(Context& context, std::string name, std::size_t features, float eps = 1e-5f);
  LayerNorm(const LayerNorm&) = delete;
  LayerNorm& operator=(const LayerNorm&) = delete;

  // x: rows x features. Throws std::invalid_argument for a wrong shape or a NaN/infinity,
  // MisuseError for a tensor of another context or once the context is destroyed.
  Tensor forward(const Tensor& x);

  const std::string& name() const { return parameters_->name; }
  Matrix& gamma() { return parameters_->norm.gamma; }  // 1 x features
  Matrix& beta() { return parameters_->norm.beta; }
  Matrix& gamma_grad() { return parameters_->norm.gamma_grad; }
  Matrix& beta_grad() { return parameters_->norm.beta_grad; }
  float eps() const { return parameters_->norm.eps; }

  struct Parameters {
    std::string name;
    NormParameters norm;
  };

 private:
  ContextRef context_;
  std::shared_ptr<Parameters> parameters_;
};

// The normalisation itself (what LayerNorm and LayerNormLinear share): y, and what the backward
// needs; the backward of y's gradient into x's, gamma's and beta's (added).
struct NormSaved {
  Matrix input, mean, rstd;
};
Matrix layer_norm(Backend& backend, const Matrix& x, const NormParameters& norm, NormSaved& saved);
Matrix layer_norm_backward(Backend& backend, const NormSaved& saved, const Matrix& grad_output, NormParameters& norm);

}  // namespace fp8sm::runtime
