#include "runtime/linear.hpp"

#include <fmt/core.h>

#include <stdexcept>

#include "runtime/fp8_linear.hpp"

namespace fp8sm::runtime {

// A Linear's node: what its forward saved (fp8_linear.hpp); it reads the input, and the
// weight's gradient goes to the module.
class LinearNode final : public NodeFunction {
 public:
  explicit LinearNode(Linear& module) : module_(module) {}

  std::vector<Matrix> backward(const Matrix& grad_output) override {
    if (!saved.present()) {
      throw std::logic_error(
          fmt::format("Linear {}: backward without saved tensors (its checkpoint was not recomputed)", module_.name()));
    }
    Context& context = module_.context_;
    return {linear_backward(context.backend(), context.recipe(), context.state(module_.id_).backward, saved,
                            grad_output, module_.weight_grad_)};
  }

  void drop_saved() override { saved.clear(); }
  // The recompute's casts decide the representation: under a semantics whose recompute runs
  // with another FP8 flag than the forward did, the twin saved fp32 where the original had
  // saved FP8 or the other way round, and backward computes from what it has.
  void take_saved(NodeFunction& twin) override { saved = static_cast<LinearNode&>(twin).saved; }

  bool is_twin(const NodeFunction& twin) const override {
    const auto* other = dynamic_cast<const LinearNode*>(&twin);
    return other != nullptr && &other->module_ == &module_;
  }

  LinearSaved saved;

 private:
  Linear& module_;
};

Linear::Linear(Context& context, const std::string& name, std::size_t in_features, std::size_t out_features,
               std::uint64_t seed)
    : context_(context),
      id_(context.add_module(name)),
      weight_(out_features, in_features),
      weight_grad_(out_features, in_features) {
  if (in_features == 0 || out_features == 0) throw std::invalid_argument(fmt::format("Linear {}: a dimension is 0", name));
  // The weight and its gradient live where the backend computes (device memory on a device
  // backend: uploaded once, here).
  weight_ = context.backend().to_backend(initial_linear_weight(out_features, in_features, seed));
  weight_grad_ = context.backend().zeros(out_features, in_features);
}

Tensor Linear::forward(const Tensor& x) {
  if (x.value.cols != weight_.cols) {
    throw std::invalid_argument(
        fmt::format("Linear {}: input has {} features, expected {}", name(), x.value.cols, weight_.cols));
  }
  require_finite(x.value, fmt::format("Linear {}: input", name()));
  require_finite(weight_, fmt::format("Linear {}: weight", name()));
  return context_.run_module(id_, {x.id}, [&](bool fp8) {
    auto node = std::make_shared<LinearNode>(*this);
    Matrix y =
        linear_forward(context_.backend(), context_.recipe(), context_.state(id_).forward, x.value, weight_, fp8, node->saved);
    return std::make_pair(std::move(y), std::shared_ptr<NodeFunction>(node));
  });
}

Matrix Linear::forward(const Matrix& x) { return context_.chain_output(forward(context_.chain_input(x))); }

}  // namespace fp8sm::runtime
