#include "runtime/layer_norm_linear.hpp"

#include <fmt/core.h>

#include <stdexcept>

#include "runtime/fp8_linear.hpp"
#include "runtime/op_recording.hpp"

namespace fp8sm::runtime {

// What TE's LayerNormLinear saves: the normalisation's input and statistics, and its Linear's.
class LayerNormLinearNode final : public NodeFunction {
 public:
  LayerNormLinearNode(Context& context, std::shared_ptr<LayerNormLinear::Parameters> parameters)
      : context_(context), parameters_(std::move(parameters)) {}

  std::vector<Matrix> backward(const Matrix& grad_output) override {
    LinearParameters& p = parameters_->linear;
    if (!linear.present()) {
      throw std::logic_error(
          fmt::format("LayerNormLinear {}: backward without saved tensors (its checkpoint was not recomputed)", p.name));
    }
    const Matrix dnorm = linear_backward(context_.backend(), context_.recipe(), Ops::backward_meta(context_, p.id), linear,
                                         grad_output, p.weight_grad);
    return {layer_norm_backward(context_.backend(), norm, dnorm, parameters_->norm)};
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
    return other != nullptr && other->parameters_ == parameters_;
  }
  void require_ready(const std::string& what) const override {
    const std::string module = fmt::format("{}: LayerNormLinear {}", what, parameters_->linear.name);
    parameters_->linear.require_backward(module);
    parameters_->norm.require_backward(module);
  }

  LinearSaved linear;
  NormSaved norm;

 private:
  Context& context_;  // the node lives in the context's graph
  std::shared_ptr<LayerNormLinear::Parameters> parameters_;
};

LayerNormLinear::LayerNormLinear(Context& context, const std::string& name, std::size_t in_features,
                                 std::size_t out_features, std::uint64_t seed, float eps)
    : context_(context),
      parameters_(std::make_shared<Parameters>(
          Parameters{LinearParameters(context.backend(), name, in_features, out_features, seed, "LayerNormLinear " + name),
                     NormParameters(context.backend(), in_features, eps, "LayerNormLinear " + name)})) {
  parameters_->linear.id = Ops::add_module(context, name);  // last: nothing joins the context if the above threw
}

ModuleMeta LayerNormLinear::meta() const { return static_cast<const Context&>(context()).meta(parameters_->linear.id); }

Tensor LayerNormLinear::forward(const Tensor& x) {
  Context& c = context();
  const LinearParameters& p = parameters_->linear;
  const NormParameters& norm = parameters_->norm;
  const std::string what = "LayerNormLinear " + p.name;
  Ops::require_operand(c, x, what + ": input");
  if (x.value.cols != p.shape.cols) {
    throw std::invalid_argument(fmt::format("{}: input has {} features, expected {}", what, x.value.cols, p.shape.cols));
  }
  p.require_forward(what);
  norm.require_forward(what);
  return Ops::run_module(c, p.id, {&x}, [&](bool fp8) {
    auto node = std::make_shared<LayerNormLinearNode>(c, parameters_);
    const Matrix normalised = layer_norm(c.backend(), x.value, norm, node->norm);
    Matrix y = linear_forward(c.backend(), c.recipe(), Ops::forward_meta(c, p.id), normalised, p.weight, fp8,
                              node->linear);
    return std::make_pair(std::move(y), std::shared_ptr<NodeFunction>(node));
  });
}

}  // namespace fp8sm::runtime
