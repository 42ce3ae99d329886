#include "runtime/ops.hpp"

#include <fmt/core.h>

#include <stdexcept>
#include <string>
#include <utility>

#include "kernels/layer_math.hpp"
#include "runtime/op_recording.hpp"

namespace fp8sm::runtime {

namespace {

void require_same_shape(const Matrix& a, const Matrix& b, const char* what) {
  if (a.rows != b.rows || a.cols != b.cols) {
    throw std::invalid_argument(fmt::format("{}: shapes {}x{} and {}x{} differ", what, a.rows, a.cols, b.rows, b.cols));
  }
}

// An element-wise function's node: it keeps its input (the derivative reads it).
template <class Derivative>
class ElementWiseNode final : public NodeFunction {
 public:
  ElementWiseNode(Matrix input, Derivative derivative) : input_(std::move(input)), derivative_(derivative) {}
  std::vector<Matrix> backward(const Matrix& grad_output) override {
    Matrix grad(grad_output.rows, grad_output.cols);
    derivative_(input_, grad_output, grad);
    return {std::move(grad)};
  }
  void drop_saved() override { input_ = Matrix{}; }
  void take_saved(NodeFunction& twin) override { input_ = static_cast<ElementWiseNode&>(twin).input_; }
  bool is_twin(const NodeFunction& twin) const override { return dynamic_cast<const ElementWiseNode*>(&twin) != nullptr; }

 private:
  Matrix input_;
  Derivative derivative_;
};

template <class Derivative>
std::shared_ptr<NodeFunction> element_wise_node(const Matrix& input, Derivative derivative) {
  return std::make_shared<ElementWiseNode<Derivative>>(input, derivative);
}

struct ReluDerivative {
  void operator()(const Matrix& x, const Matrix& dy, Matrix& dx) const {
    for (std::size_t i = 0; i < dx.values.size(); ++i) dx.values[i] = x.values[i] > 0.0f ? dy.values[i] : 0.0f;
  }
};
struct GeluDerivative {
  void operator()(const Matrix& x, const Matrix& dy, Matrix& dx) const {
    kernels::gelu_backward(x.values.data(), dy.values.data(), dx.values.data(), dx.values.size());
  }
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
  AttentionNode(Matrix qkv, Matrix probabilities, std::size_t sequences, std::size_t length)
      : qkv_(std::move(qkv)), probabilities_(std::move(probabilities)), sequences_(sequences), length_(length) {}
  std::vector<Matrix> backward(const Matrix& grad_output) override {
    Matrix dqkv(qkv_.rows, qkv_.cols);
    kernels::causal_attention_backward(qkv_.values.data(), probabilities_.values.data(), grad_output.values.data(),
                                       sequences_, length_, qkv_.cols / 3, dqkv.values.data());
    return {std::move(dqkv)};
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
  Matrix qkv_, probabilities_;
  std::size_t sequences_, length_;
};

class CrossEntropyNode final : public NodeFunction {
 public:
  CrossEntropyNode(Matrix probabilities, std::vector<int> targets)
      : probabilities_(std::move(probabilities)), targets_(std::move(targets)) {}
  std::vector<Matrix> backward(const Matrix& grad_output) override {
    Matrix dlogits(probabilities_.rows, probabilities_.cols);
    kernels::softmax_cross_entropy_backward(probabilities_.values.data(), probabilities_.rows, probabilities_.cols,
                                            targets_.data(), grad_output.values.at(0), dlogits.values.data());
    return {std::move(dlogits)};
  }
  void drop_saved() override { probabilities_ = Matrix{}; }
  void take_saved(NodeFunction& twin) override { probabilities_ = static_cast<CrossEntropyNode&>(twin).probabilities_; }
  bool is_twin(const NodeFunction& twin) const override { return dynamic_cast<const CrossEntropyNode*>(&twin) != nullptr; }

 private:
  Matrix probabilities_;
  std::vector<int> targets_;
};

}  // namespace

Tensor relu(Context& context, const Tensor& x) {
  Matrix y = x.value;
  for (float& v : y.values) v = v > 0.0f ? v : 0.0f;
  return Ops::record(context, std::move(y), {x.id}, element_wise_node(x.value, ReluDerivative{}));
}

Matrix relu(Context& context, const Matrix& x) {
  return Ops::chain_output(context, relu(context, Ops::chain_input(context, x)));
}

Tensor gelu(Context& context, const Tensor& x) {
  require_finite(x.value, "gelu: input");
  Matrix y(x.value.rows, x.value.cols);
  kernels::gelu_forward(x.value.values.data(), y.values.data(), y.values.size());
  return Ops::record(context, std::move(y), {x.id}, element_wise_node(x.value, GeluDerivative{}));
}

Tensor add(Context& context, const Tensor& a, const Tensor& b) {
  require_same_shape(a.value, b.value, "add");
  Matrix sum = a.value;
  for (std::size_t i = 0; i < sum.values.size(); ++i) sum.values[i] += b.value.values[i];
  return Ops::record(context, std::move(sum), {a.id, b.id}, std::make_shared<AddNode>());
}

Tensor causal_attention(Context& context, const Tensor& qkv, std::size_t sequence_length) {
  const Matrix& x = qkv.value;
  if (x.cols == 0 || x.cols % 3 != 0) {
    throw std::invalid_argument(fmt::format("causal_attention: {} columns are not a query, a key and a value", x.cols));
  }
  if (sequence_length == 0 || x.rows % sequence_length != 0) {
    throw std::invalid_argument(fmt::format("causal_attention: {} rows are not sequences of {}", x.rows, sequence_length));
  }
  require_finite(x, "causal_attention: input");
  const std::size_t sequences = x.rows / sequence_length;
  Matrix out(x.rows, x.cols / 3);
  Matrix probabilities(sequences * sequence_length, sequence_length);
  kernels::causal_attention_forward(x.values.data(), sequences, sequence_length, x.cols / 3, out.values.data(),
                                    probabilities.values.data());
  return Ops::record(context, std::move(out), {qkv.id},
                     std::make_shared<AttentionNode>(x, std::move(probabilities), sequences, sequence_length));
}

Tensor cross_entropy(Context& context, const Tensor& logits, const std::vector<int>& targets) {
  const Matrix& x = logits.value;
  if (targets.size() != x.rows || x.cols == 0) {
    throw std::invalid_argument(fmt::format("cross_entropy: {} targets for {}x{} logits", targets.size(), x.rows, x.cols));
  }
  for (std::size_t r = 0; r < targets.size(); ++r) {
    if (targets[r] < -1 || (targets[r] >= 0 && static_cast<std::size_t>(targets[r]) >= x.cols)) {
      throw std::invalid_argument(fmt::format(
          "cross_entropy: target {} of row {} is not one of {} classes (or -1: not counted)", targets[r], r, x.cols));
    }
  }
  require_finite(x, "cross_entropy: logits");
  Matrix probabilities(x.rows, x.cols);
  Matrix loss(1, 1);
  loss.values[0] = kernels::softmax_cross_entropy_forward(x.values.data(), x.rows, x.cols, targets.data(),
                                                          probabilities.values.data());
  return Ops::record(context, std::move(loss), {logits.id},
                     std::make_shared<CrossEntropyNode>(std::move(probabilities), targets));
}

}  // namespace fp8sm::runtime
