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
// On the host (on_host).
struct GeluDerivative {
  Matrix operator()(Backend& backend, const Matrix& x, const Matrix& dy) const {
    Matrix x_down, dy_down;
    const Matrix& xh = on_host(x, x_down);
    const Matrix& dyh = on_host(dy, dy_down);
    Matrix dx(dyh.rows, dyh.cols);
    kernels::gelu_backward(xh.values.data(), dyh.values.data(), dx.values.data(), dx.values.size());
    return backend.to_backend(std::move(dx));
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
  AttentionNode(Backend& backend, Matrix qkv, Matrix probabilities, std::size_t sequences, std::size_t length)
      : backend_(backend),
        qkv_(std::move(qkv)),
        probabilities_(std::move(probabilities)),
        sequences_(sequences),
        length_(length) {}
  std::vector<Matrix> backward(const Matrix& grad_output) override {
    Matrix down;
    const Matrix& dy = on_host(grad_output, down);
    Matrix dqkv(qkv_.rows, qkv_.cols);
    kernels::causal_attention_backward(qkv_.values.data(), probabilities_.values.data(), dy.values.data(), sequences_,
                                       length_, qkv_.cols / 3, dqkv.values.data());
    return {backend_.to_backend(std::move(dqkv))};
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
  Matrix qkv_, probabilities_;  // on the host
  std::size_t sequences_, length_;
};

class CrossEntropyNode final : public NodeFunction {
 public:
  CrossEntropyNode(Backend& backend, Matrix probabilities, std::vector<int> targets)
      : backend_(backend), probabilities_(std::move(probabilities)), targets_(std::move(targets)) {}
  std::vector<Matrix> backward(const Matrix& grad_output) override {
    const Matrix g = grad_output.to_host();  // 1 x 1
    Matrix dlogits(probabilities_.rows, probabilities_.cols);
    kernels::softmax_cross_entropy_backward(probabilities_.values.data(), probabilities_.rows, probabilities_.cols,
                                            targets_.data(), g.values.at(0), dlogits.values.data());
    return {backend_.to_backend(std::move(dlogits))};
  }
  void drop_saved() override { probabilities_ = Matrix{}; }
  void take_saved(NodeFunction& twin) override { probabilities_ = static_cast<CrossEntropyNode&>(twin).probabilities_; }
  bool is_twin(const NodeFunction& twin) const override { return dynamic_cast<const CrossEntropyNode*>(&twin) != nullptr; }

 private:
  Backend& backend_;
  Matrix probabilities_;  // on the host
  std::vector<int> targets_;
};

}  // namespace

Tensor relu(Context& context, const Tensor& x) {
  Matrix y = context.backend().relu(x.value);
  return Ops::record(context, std::move(y), {x.id}, element_wise_node(context, x.value, ReluDerivative{}));
}

Matrix relu(Context& context, const Matrix& x) {
  return Ops::chain_output(context, relu(context, Ops::chain_input(context, x)));
}

Tensor gelu(Context& context, const Tensor& x) {
  Matrix down;
  const Matrix& xh = on_host(x.value, down);
  require_finite(xh, "gelu: input");
  Matrix y(xh.rows, xh.cols);
  kernels::gelu_forward(xh.values.data(), y.values.data(), y.values.size());
  return Ops::record(context, Ops::to_backend(context, std::move(y)), {x.id},
                     element_wise_node(context, x.value, GeluDerivative{}));
}

Tensor add(Context& context, const Tensor& a, const Tensor& b) {
  require_same_shape(a.value, b.value, "add");
  return Ops::record(context, context.backend().add(a.value, b.value), {a.id, b.id}, std::make_shared<AddNode>());
}

Tensor causal_attention(Context& context, const Tensor& qkv, std::size_t sequence_length) {
  if (qkv.value.cols == 0 || qkv.value.cols % 3 != 0) {
    throw std::invalid_argument(
        fmt::format("causal_attention: {} columns are not a query, a key and a value", qkv.value.cols));
  }
  if (sequence_length == 0 || qkv.value.rows % sequence_length != 0) {
    throw std::invalid_argument(
        fmt::format("causal_attention: {} rows are not sequences of {}", qkv.value.rows, sequence_length));
  }
  Matrix down;
  const Matrix& x = on_host(qkv.value, down);
  require_finite(x, "causal_attention: input");
  const std::size_t sequences = x.rows / sequence_length;
  Matrix out(x.rows, x.cols / 3);
  Matrix probabilities(sequences * sequence_length, sequence_length);
  kernels::causal_attention_forward(x.values.data(), sequences, sequence_length, x.cols / 3, out.values.data(),
                                    probabilities.values.data());
  return Ops::record(
      context, Ops::to_backend(context, std::move(out)), {qkv.id},
      std::make_shared<AttentionNode>(context.backend(), x, std::move(probabilities), sequences, sequence_length));
}

Tensor cross_entropy(Context& context, const Tensor& logits, const std::vector<int>& targets) {
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
  Matrix down;
  const Matrix& x = on_host(logits.value, down);
  require_finite(x, "cross_entropy: logits");
  Matrix probabilities(x.rows, x.cols);
  Matrix loss(1, 1);
  loss.values[0] = kernels::softmax_cross_entropy_forward(x.values.data(), x.rows, x.cols, targets.data(),
                                                          probabilities.values.data());
  return Ops::record(context, Ops::to_backend(context, std::move(loss)), {logits.id},
                     std::make_shared<CrossEntropyNode>(context.backend(), std::move(probabilities), targets));
}

}  // namespace fp8sm::runtime
