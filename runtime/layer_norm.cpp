#include "runtime/layer_norm.hpp"

#include <fmt/core.h>

#include <stdexcept>
#include <utility>

#include "kernels/layer_math.hpp"
#include "runtime/op_recording.hpp"

namespace fp8sm::runtime {

Matrix layer_norm(Backend& backend, const Matrix& x, const Matrix& gamma, const Matrix& beta, float eps,
                  NormSaved& saved) {
  saved.input = x;
  return backend.layer_norm(x, gamma, beta, eps, saved.mean, saved.rstd);
}

Matrix layer_norm_backward(Backend& backend, const NormSaved& saved, const Matrix& grad_output, const Matrix& gamma,
                           Matrix& gamma_grad, Matrix& beta_grad) {
  return backend.layer_norm_backward(saved.input, grad_output, gamma, saved.mean, saved.rstd, gamma_grad, beta_grad);
}

class LayerNormNode final : public NodeFunction {
 public:
  LayerNormNode(LayerNorm& module, NormSaved saved) : module_(module), saved_(std::move(saved)) {}
  std::vector<Matrix> backward(const Matrix& grad_output) override {
    if (!saved_.input.held()) {
      throw std::logic_error(fmt::format("LayerNorm {}: backward without saved tensors", module_.name()));
    }
    return {layer_norm_backward(module_.context_.backend(), saved_, grad_output, module_.gamma_, module_.gamma_grad_,
                                module_.beta_grad_)};
  }
  void drop_saved() override { saved_ = NormSaved{}; }
  void take_saved(NodeFunction& twin) override { saved_ = static_cast<LayerNormNode&>(twin).saved_; }
  bool is_twin(const NodeFunction& twin) const override {
    const auto* other = dynamic_cast<const LayerNormNode*>(&twin);
    return other != nullptr && &other->module_ == &module_;
  }

 private:
  LayerNorm& module_;
  NormSaved saved_;
};

LayerNorm::LayerNorm(Context& context, std::string name, std::size_t features, float eps)
    : context_(context),
      name_(std::move(name)),
      eps_(eps),
      gamma_(1, features, 1.0f),
      beta_(1, features, 0.0f),
      gamma_grad_(1, features),
      beta_grad_(1, features) {
  if (features == 0) throw std::invalid_argument(fmt::format("LayerNorm {}: no features", name_));
  if (!(eps > 0.0f)) throw std::invalid_argument(fmt::format("LayerNorm {}: eps must be positive", name_));
  for (Matrix* m : {&gamma_, &beta_, &gamma_grad_, &beta_grad_}) *m = Ops::to_backend(context, std::move(*m));
}

Tensor LayerNorm::forward(const Tensor& x) {
  if (x.value.cols != gamma_.cols) {
    throw std::invalid_argument(fmt::format("LayerNorm {}: input has {} features, expected {}", name_, x.value.cols, gamma_.cols));
  }
  require_finite(x.value, fmt::format("LayerNorm {}: input", name_));
  NormSaved saved;
  Matrix y = layer_norm(context_.backend(), x.value, gamma_, beta_, eps_, saved);
  return Ops::record(context_, std::move(y), {x.id}, std::make_shared<LayerNormNode>(*this, std::move(saved)));
}

}  // namespace fp8sm::runtime
