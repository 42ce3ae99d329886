#include "runtime/layer_norm_linear.hpp"

#include <fmt/core.h>

#include <stdexcept>

#include "runtime/fp8_linear.hpp"
#include "runtime/layer_norm.hpp"
#include "runtime/op_recording.hpp"

namespace fp8sm::runtime {

// What TE's LayerNormLinear saves: the normalisation's input and statistics, and its Linear's.
class LayerNormLinearNode final : public NodeFunction {
 public:
  explicit LayerNormLinearNode(LayerNormLinear& module) : module_(module) {}

  std::vector<Matrix> backward(const Matrix& grad_output) override {
    if (!linear.present()) {
      throw std::logic_error(fmt::format(
          "LayerNormLinear {}: backward without saved tensors (its checkpoint was not recomputed)", module_.name()));
    }
    Context& context = module_.context_;
    const Matrix dnorm = linear_backward(context.backend(), context.recipe(), Ops::backward_meta(context, module_.id_),
                                         linear, grad_output, module_.weight_grad_);
    return {layer_norm_backward(context.backend(), norm, dnorm, module_.gamma_, module_.gamma_grad_,
                                module_.beta_grad_)};
  }
  void drop_saved() override {
    linear.clear();
    norm = NormSaved{};
  }
  void take_saved(NodeFunction& twin) override {
    auto& other = static_cast<LayerNormLinearNode&>(twin);
    linear = other.linear;
    norm = other.norm;
  }
  bool is_twin(const NodeFunction& twin) const override {
    const auto* other = dynamic_cast<const LayerNormLinearNode*>(&twin);
    return other != nullptr && &other->module_ == &module_;
  }

  LinearSaved linear;
  NormSaved norm;

 private:
  LayerNormLinear& module_;
};

LayerNormLinear::LayerNormLinear(Context& context, const std::string& name, std::size_t in_features,
                                 std::size_t out_features, std::uint64_t seed, float eps)
    : context_(context),
      id_(Ops::add_module(context, name)),
      eps_(eps),
      weight_(out_features, in_features),
      weight_grad_(out_features, in_features),
      gamma_(1, in_features, 1.0f),
      beta_(1, in_features, 0.0f),
      gamma_grad_(1, in_features),
      beta_grad_(1, in_features) {
  if (in_features == 0 || out_features == 0) {
    throw std::invalid_argument(fmt::format("LayerNormLinear {}: a dimension is 0", name));
  }
  if (!(eps > 0.0f)) throw std::invalid_argument(fmt::format("LayerNormLinear {}: eps must be positive", name));
  // The parameters and their gradients where the backend computes.
  weight_ = Ops::to_backend(context, initial_linear_weight(out_features, in_features, seed));
  weight_grad_ = context.backend().zeros(out_features, in_features);
  for (Matrix* m : {&gamma_, &beta_, &gamma_grad_, &beta_grad_}) *m = Ops::to_backend(context, std::move(*m));
}

Tensor LayerNormLinear::forward(const Tensor& x) {
  if (x.value.cols != weight_.cols) {
    throw std::invalid_argument(
        fmt::format("LayerNormLinear {}: input has {} features, expected {}", name(), x.value.cols, weight_.cols));
  }
  require_finite(x.value, fmt::format("LayerNormLinear {}: input", name()));
  require_finite(weight_, fmt::format("LayerNormLinear {}: weight", name()));
  return Ops::run_module(context_, id_, {x.id}, [&](bool fp8) {
    auto node = std::make_shared<LayerNormLinearNode>(*this);
    const Matrix normalised = layer_norm(context_.backend(), x.value, gamma_, beta_, eps_, node->norm);
    Matrix y = linear_forward(context_.backend(), context_.recipe(), Ops::forward_meta(context_, id_), normalised,
                              weight_, fp8, node->linear);
    return std::make_pair(std::move(y), std::shared_ptr<NodeFunction>(node));
  });
}

}  // namespace fp8sm::runtime
