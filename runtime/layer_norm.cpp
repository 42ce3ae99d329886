#include "runtime/layer_norm.hpp"

#include <fmt/core.h>

#include <stdexcept>
#include <utility>

#include "kernels/layer_math.hpp"
#include "runtime/op_recording.hpp"

namespace fp8sm::runtime {

Matrix layer_norm(const Matrix& x, const Matrix& gamma, const Matrix& beta, float eps, NormSaved& saved) {
  Matrix y(x.rows, x.cols);
  saved.input = x;
  saved.mean = Matrix(x.rows, 1);
  saved.rstd = Matrix(x.rows, 1);
  kernels::layer_norm_forward(x.values.data(), x.rows, x.cols, gamma.values.data(), beta.values.data(), eps,
                              y.values.data(), saved.mean.values.data(), saved.rstd.values.data());
  return y;
}

Matrix layer_norm_backward(const NormSaved& saved, const Matrix& grad_output, const Matrix& gamma, Matrix& gamma_grad,
                           Matrix& beta_grad) {
  Matrix dx(saved.input.rows, saved.input.cols);
  kernels::layer_norm_backward(saved.input.values.data(), grad_output.values.data(), saved.input.rows,
                               saved.input.cols, gamma.values.data(), saved.mean.values.data(),
                               saved.rstd.values.data(), dx.values.data(), gamma_grad.values.data(),
                               beta_grad.values.data());
  return dx;
}

class LayerNormNode final : public NodeFunction {
 public:
  LayerNormNode(LayerNorm& module, NormSaved saved) : module_(module), saved_(std::move(saved)) {}
  std::vector<Matrix> backward(const Matrix& grad_output) override {
    if (saved_.input.values.empty()) {
      throw std::logic_error(fmt::format("LayerNorm {}: backward without saved tensors", module_.name()));
    }
    Matrix down;
    const Matrix& dy = on_host(grad_output, down);
    return {Ops::to_backend(module_.context_,
                            layer_norm_backward(saved_, dy, module_.gamma_, module_.gamma_grad_, module_.beta_grad_))};
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
}

Tensor LayerNorm::forward(const Tensor& x) {
  if (x.value.cols != gamma_.cols) {
    throw std::invalid_argument(fmt::format("LayerNorm {}: input has {} features, expected {}", name_, x.value.cols, gamma_.cols));
  }
  Matrix down;
  const Matrix& xh = on_host(x.value, down);
  require_finite(xh, fmt::format("LayerNorm {}: input", name_));
  NormSaved saved;
  Matrix y = layer_norm(xh, gamma_, beta_, eps_, saved);
  return Ops::record(context_, Ops::to_backend(context_, std::move(y)), {x.id},
                     std::make_shared<LayerNormNode>(*this, std::move(saved)));
}

}  // namespace fp8sm::runtime
