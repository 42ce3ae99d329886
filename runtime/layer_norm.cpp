#include "runtime/layer_norm.hpp"

#include <fmt/core.h>

#include <stdexcept>
#include <utility>

#include "kernels/layer_math.hpp"
#include "runtime/op_recording.hpp"

namespace fp8sm::runtime {

NormParameters::NormParameters(Backend& backend, std::size_t n, float epsilon, const std::string& module)
    : features(n), eps(epsilon) {
  if (features == 0) throw std::invalid_argument(fmt::format("{}: no features", module));
  if (!(eps > 0.0f)) throw std::invalid_argument(fmt::format("{}: eps must be positive", module));
  value_count(1, features, module + ": gamma");
  gamma = backend.to_backend(Matrix(1, features, 1.0f));
  beta = backend.to_backend(Matrix(1, features, 0.0f));
  gamma_grad = backend.to_backend(Matrix(1, features));
  beta_grad = backend.to_backend(Matrix(1, features));
}

void NormParameters::require_forward(const std::string& what) const {
  for (const auto& [m, name] : {std::pair{&gamma, "gamma"}, std::pair{&beta, "beta"}}) {
    require_shape(*m, {1, features}, fmt::format("{}: {}", what, name));
    require_finite(*m, fmt::format("{}: {}", what, name));
  }
}

void NormParameters::require_backward(const std::string& what) const {
  require_shape(gamma, {1, features}, what + ": gamma");
  require_shape(gamma_grad, {1, features}, what + ": gamma's gradient");
  require_shape(beta_grad, {1, features}, what + ": beta's gradient");
}

Matrix layer_norm(Backend& backend, const Matrix& x, const NormParameters& norm, NormSaved& saved) {
  saved.input = x;
  return backend.layer_norm(x, norm.gamma, norm.beta, norm.eps, saved.mean, saved.rstd);
}

Matrix layer_norm_backward(Backend& backend, const NormSaved& saved, const Matrix& grad_output, NormParameters& norm) {
  return backend.layer_norm_backward(saved.input, grad_output, norm.gamma, saved.mean, saved.rstd, norm.gamma_grad,
                                     norm.beta_grad);
}

class LayerNormNode final : public NodeFunction {
 public:
  LayerNormNode(Backend& backend, std::shared_ptr<LayerNorm::Parameters> parameters, NormSaved saved)
      : backend_(backend), parameters_(std::move(parameters)), saved_(std::move(saved)) {}
  std::vector<Matrix> backward(const Matrix& grad_output) override {
    if (!saved_.input.held()) {
      throw std::logic_error(fmt::format("LayerNorm {}: backward without saved tensors", parameters_->name));
    }
    return {layer_norm_backward(backend_, saved_, grad_output, parameters_->norm)};
  }
  void drop_saved() override { saved_ = NormSaved{}; }
  void take_saved(NodeFunction& twin) override { saved_ = static_cast<LayerNormNode&>(twin).saved_; }
  bool is_twin(const NodeFunction& twin) const override {
    const auto* other = dynamic_cast<const LayerNormNode*>(&twin);
    return other != nullptr && other->parameters_ == parameters_;
  }
  void require_ready(const std::string& what) const override {
    parameters_->norm.require_backward(fmt::format("{}: LayerNorm {}", what, parameters_->name));
  }

 private:
  Backend& backend_;  // the context's: the node lives in its graph
  std::shared_ptr<LayerNorm::Parameters> parameters_;
  NormSaved saved_;
};

LayerNorm::LayerNorm(Context& context, std::string name, std::size_t features, float eps)
    : context_(context),
      parameters_(std::make_shared<Parameters>(
          Parameters{name, NormParameters(context.backend(), features, eps, "LayerNorm " + name)})) {}

Tensor LayerNorm::forward(const Tensor& x) {
  Context& context = context_.get("LayerNorm", parameters_->name);
  const std::string what = "LayerNorm " + parameters_->name;
  Ops::require_operand(context, x, what + ": input");
  const NormParameters& norm = parameters_->norm;
  if (x.value.cols != norm.features) {
    throw std::invalid_argument(fmt::format("{}: input has {} features, expected {}", what, x.value.cols, norm.features));
  }
  norm.require_forward(what);
  NormSaved saved;
  Matrix y = layer_norm(context.backend(), x.value, norm, saved);
  return Ops::record(context, std::move(y), {&x},
                     std::make_shared<LayerNormNode>(context.backend(), parameters_, std::move(saved)));
}

}  // namespace fp8sm::runtime
