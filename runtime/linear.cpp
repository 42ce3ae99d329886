#include "runtime/linear.hpp"

#include <fmt/core.h>

#include <stdexcept>

#include "runtime/fp8_linear.hpp"

namespace fp8sm::runtime {

// A Linear's node: what its forward saved (fp8_linear.hpp); it reads the input, and the
// weight's gradient goes to the module's parameters, which it shares.
class LinearNode final : public NodeFunction {
 public:
  LinearNode(Context& context, std::shared_ptr<LinearParameters> parameters)
      : context_(context), parameters_(std::move(parameters)) {}

  std::vector<Matrix> backward(const Matrix& grad_output) override {
    if (!saved.present()) {
      throw std::logic_error(
          fmt::format("Linear {}: backward without saved tensors (its checkpoint was not recomputed)", parameters_->name));
    }
    return {linear_backward(context_.backend(), context_.recipe(), context_.state(parameters_->id).backward, saved,
                            grad_output, parameters_->weight_grad)};
  }

  void drop_saved() override { saved.clear(); }
  // The recompute's casts decide the representation: under a semantics whose recompute runs
  // with another FP8 flag than the forward did, the twin saved fp32 where the original had
  // saved FP8 or the other way round, and backward computes from what it has.
  void take_saved(NodeFunction& twin) override { saved = static_cast<LinearNode&>(twin).saved; }

  bool is_twin(const NodeFunction& twin) const override {
    const auto* other = dynamic_cast<const LinearNode*>(&twin);
    return other != nullptr && other->parameters_ == parameters_;
  }

  void require_ready(const std::string& what) const override {
    parameters_->require_backward(fmt::format("{}: Linear {}", what, parameters_->name));
  }

  LinearSaved saved;

 private:
  Context& context_;  // the node lives in the context's graph
  std::shared_ptr<LinearParameters> parameters_;
};

Linear::Linear(Context& context, const std::string& name, std::size_t in_features, std::size_t out_features,
               std::uint64_t seed)
    : context_(context),
      parameters_(std::make_shared<LinearParameters>(context.backend(), name, in_features, out_features, seed,
                                                     "Linear " + name)) {
  parameters_->id = context.add_module(name);  // last: nothing joins the context if the above threw
}

ModuleMeta Linear::meta() const { return context().meta(parameters_->id); }

Tensor Linear::forward(const Tensor& x) {
  Context& c = context();
  const LinearParameters& p = *parameters_;
  c.require_operand(x, fmt::format("Linear {}: input", p.name));
  if (x.value.cols != p.shape.cols) {
    throw std::invalid_argument(fmt::format("Linear {}: input has {} features, expected {}", p.name, x.value.cols, p.shape.cols));
  }
  p.require_forward("Linear " + p.name);
  return c.run_module(p.id, {&x}, [&](bool fp8) {
    auto node = std::make_shared<LinearNode>(c, parameters_);
    Matrix y = linear_forward(c.backend(), c.recipe(), c.state(p.id).forward, x.value, p.weight, fp8, node->saved);
    return std::make_pair(std::move(y), std::shared_ptr<NodeFunction>(node));
  });
}

Matrix Linear::forward(const Matrix& x) {
  Context& c = context();
  return c.chain_output(forward(c.chain_input(x, fmt::format("Linear {}: input", parameters_->name))));
}

}  // namespace fp8sm::runtime
