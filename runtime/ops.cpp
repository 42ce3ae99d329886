#include "runtime/ops.hpp"

#include <fmt/core.h>

#include <stdexcept>
#include <string>
#include <utility>

#include "runtime/op_recording.hpp"

namespace fp8sm::runtime {

namespace {

void require_same_shape(const Matrix& a, const Matrix& b, const char* what) {
  if (a.rows != b.rows || a.cols != b.cols) {
    throw std::invalid_argument(fmt::format("{}: shapes {}x{} and {}x{} differ", what, a.rows, a.cols, b.rows, b.cols));
  }
}

// An element-wise function's node: it keeps its input (the derivative reads it), and computes
// the derivative with the context's backend.
template <class Derivative>
class ElementWiseNode final : public NodeFunction {
 public:
  ElementWiseNode(Backend& backend, Matrix input, Derivative derivative)
      : backend_(backend), input_(std::move(input)), derivative_(derivative) {}
  std::vector<Matrix> backward(const Matrix& grad_output) override {
    return {derivative_(backend_, input_, grad_output)};
  }
  void drop_saved() override { input_ = Matrix{}; }
  void take_saved(NodeFunction& twin) override { input_ = static_cast<ElementWiseNode&>(twin).input_; }
  bool is_twin(const NodeFunction& twin) const override { return dynamic_cast<const ElementWiseNode*>(&twin) != nullptr; }

 private:
  Backend& backend_;
  Matrix input_;
  Derivative derivative_;
};

template <class Derivative>
std::shared_ptr<NodeFunction> element_wise_node(Context& context, const Matrix& input, Derivative derivative) {
  return std::make_shared<ElementWiseNode<Derivative>>(context.backend(), input, derivative);
}

struct ReluDerivative {
  Matrix operator()(Backend& backend, const Matrix& x, const Matrix& dy) const { return backend.relu_backward(x, dy); }
};
struct GeluDerivative {
  Matrix operator()(Backend& backend, const Matrix& x, const Matrix& dy) const { return backend.gelu_backward(x, dy); }
};

// The sum passes its gradient to both terms; it saves nothing.
class AddNode final : public NodeFunction {
 public:
  std::vector<Matrix> backward(const Matrix& grad_output) override { return {grad_output, grad_output}; }
  void drop_saved() override {}
  void take_saved(NodeFunction& /*twin*/) override {}
  bool is_twin(const NodeFunction& twin) const override { return dynamic_cast<const AddNode*>(&twin) != nullptr; }
  bool saves_tensors() const override { return false; }
};

class AttentionNode final : public NodeFunction {
 public:
  AttentionNode(Backend& backend, Matrix qkv, Matrix probabilities, std::size_t length)
      : backend_(backend), qkv_(std::move(qkv)), probabilities_(std::move(probabilities)), length_(length) {}
  std::vector<Matrix> backward(const Matrix& grad_output) override {
    return {backend_.causal_attention_backward(qkv_, probabilities_, grad_output, length_)};
  }
  void drop_saved() override {
    qkv_ = Matrix{};
    probabilities_ = Matrix{};
  }
  void take_saved(NodeFunction& twin) override {
    auto& other = static_cast<AttentionNode&>(twin);
    qkv_ = other.qkv_;
    probabilities_ = other.probabilities_;
  }
  bool is_twin(const NodeFunction& twin) const override { return dynamic_cast<const AttentionNode*>(&twin) != nullptr; }

 private:
  Backend& backend_;
  Matrix qkv_, probabilities_;
  std::size_t length_;
};

class CrossEntropyNode final : public NodeFunction {
 public:
  CrossEntropyNode(Backend& backend, Matrix probabilities, Indices targets)
      : backend_(backend), probabilities_(std::move(probabilities)), targets_(std::move(targets)) {}
  std::vector<Matrix> backward(const Matrix& grad_output) override {
    return {backend_.cross_entropy_backward(probabilities_, targets_, grad_output)};
  }
  void drop_saved() override { probabilities_ = Matrix{}; }
  void take_saved(NodeFunction& twin) override { probabilities_ = static_cast<CrossEntropyNode&>(twin).probabilities_; }
  bool is_twin(const NodeFunction& twin) const override { return dynamic_cast<const CrossEntropyNode*>(&twin) != nullptr; }

 private:
  Backend& backend_;
  Matrix probabilities_;
  Indices targets_;
};

}  // namespace

Tensor relu(Context& context, const Tensor& x) {
  Ops::require_operand(context, x, "relu: input");
  Matrix y = context.backend().relu(x.value);
  return Ops::record(context, std::move(y), {&x}, element_wise_node(context, x.value, ReluDerivative{}));
}

Matrix relu(Context& context, const Matrix& x) {
  return Ops::chain_output(context, relu(context, Ops::chain_input(context, x, "relu: input")));
}

Tensor gelu(Context& context, const Tensor& x) {
  Ops::require_operand(context, x, "gelu: input");
  return Ops::record(context, context.backend().gelu(x.value), {&x},
                     element_wise_node(context, x.value, GeluDerivative{}));
}

Tensor add(Context& context, const Tensor& a, const Tensor& b) {
  Ops::require_operand(context, a, "add: first term");
  Ops::require_operand(context, b, "add: second term");
  require_same_shape(a.value, b.value, "add");
  return Ops::record(context, context.backend().add(a.value, b.value), {&a, &b}, std::make_shared<AddNode>());
}

Tensor causal_attention(Context& context, const Tensor& qkv, std::size_t sequence_length) {
  Ops::require_operand(context, qkv, "causal_attention: input");
  if (qkv.value.cols == 0 || qkv.value.cols % 3 != 0) {
    throw std::invalid_argument(
        fmt::format("causal_attention: {} columns are not a query, a key and a value", qkv.value.cols));
  }
  if (sequence_length == 0 || qkv.value.rows % sequence_length != 0) {
    throw std::invalid_argument(
        fmt::format("causal_attention: {} rows are not sequences of {}", qkv.value.rows, sequence_length));
  }
  Matrix probabilities;
  Matrix out = context.backend().causal_attention(qkv.value, sequence_length, probabilities);
  return Ops::record(context, std::move(out), {&qkv},
                     std::make_shared<AttentionNode>(context.backend(), qkv.value, std::move(probabilities),
                                                     sequence_length));
}

Tensor cross_entropy(Context& context, const Tensor& logits, const std::vector<int>& targets) {
  Ops::require_operand(context, logits, "cross_entropy: logits");
  if (targets.size() != logits.value.rows || logits.value.cols == 0) {
    throw std::invalid_argument(fmt::format("cross_entropy: {} targets for {}x{} logits", targets.size(),
                                            logits.value.rows, logits.value.cols));
  }
  for (std::size_t r = 0; r < targets.size(); ++r) {
    if (targets[r] < -1 || (targets[r] >= 0 && static_cast<std::size_t>(targets[r]) >= logits.value.cols)) {
      throw std::invalid_argument(fmt::format("cross_entropy: target {} of row {} is not one of {} classes (or -1: not "
                                              "counted)",
                                              targets[r], r, logits.value.cols));
    }
  }
  Backend& backend = context.backend();
  Indices on_backend = backend.indices(targets);  // an input: uploaded on a device backend
  Matrix probabilities;
  Matrix loss = backend.cross_entropy(logits.value, on_backend, probabilities);
  return Ops::record(context, std::move(loss), {&logits},
                     std::make_shared<CrossEntropyNode>(backend, std::move(probabilities), std::move(on_backend)));
}

}  // namespace fp8sm::runtime
