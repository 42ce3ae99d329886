#include "runtime/linear.hpp"

#include <fmt/core.h>

#include <cmath>
#include <random>
#include <stdexcept>

namespace fp8sm::runtime {

namespace {

// C = A Bᵀ in fp32, k ascending (the non-FP8 path).
Matrix matmul_nt(const Matrix& a, const Matrix& b) {
  Matrix c(a.rows, b.rows);
  for (std::size_t i = 0; i < a.rows; ++i) {
    for (std::size_t j = 0; j < b.rows; ++j) {
      float sum = 0.0f;
      for (std::size_t k = 0; k < a.cols; ++k) sum += a.at(i, k) * b.at(j, k);
      c.at(i, j) = sum;
    }
  }
  return c;
}

Matrix transpose(const Matrix& a) {
  Matrix t(a.cols, a.rows);
  for (std::size_t i = 0; i < a.rows; ++i) {
    for (std::size_t j = 0; j < a.cols; ++j) t.at(j, i) = a.at(i, j);
  }
  return t;
}

}  // namespace

// What a Linear's backward needs: FP8 — the transposed codes of the input and the weight as
// the forward cast them (TE saves these); fp32 — the input and the weight.
class LinearNode final : public NodeFunction {
 public:
  LinearNode(Linear& module, bool fp8) : module_(module), fp8_(fp8) {}

  Matrix backward(const Matrix& grad_output) override {
    Context& context = module_.context_;
    if (!has_saved()) {
      throw std::logic_error(
          fmt::format("Linear {}: backward without saved tensors (its checkpoint was not recomputed)", module_.name()));
    }
    if (!fp8_) {
      // dx = dy W, dW += dyᵀ x
      const Matrix dx = matmul_nt(grad_output, transpose(weight_));
      add_weight_grad(matmul_nt(transpose(grad_output), transpose(input_)));
      return dx;
    }
    ModuleMeta& meta = context.meta(module_.id_);
    const kernels::Format format = context.recipe().backward_format();
    const Fp8Matrix dy = context.backend().cast_transpose(grad_output, meta.backward.scale[0], format,
                                                          meta.backward.amax(0, 0));
    // dx (m x in) = dy (m x out) · W (out x in): A = dy codes (K = out), B = Wᵀ codes (in x out).
    const Matrix dx = context.backend().gemm_tn(dy.codes.data(), dy.rows, dy.format, dy.scale_inv,
                                                weight_fp8_.transposed.data(), weight_fp8_.cols, weight_fp8_.format,
                                                weight_fp8_.scale_inv, dy.cols);
    // dW (out x in) = dyᵀ (out x m) · x (m x in): A = dyᵀ codes (K = m), B = xᵀ codes (in x m).
    add_weight_grad(context.backend().gemm_tn(dy.transposed.data(), dy.cols, dy.format, dy.scale_inv,
                                              input_fp8_.transposed.data(), input_fp8_.cols, input_fp8_.format,
                                              input_fp8_.scale_inv, dy.rows));
    return dx;
  }

  void drop_saved() override {
    input_ = Matrix{};
    weight_ = Matrix{};
    input_fp8_ = Fp8Matrix{};
    weight_fp8_ = Fp8Matrix{};
  }
  // The recompute's casts decide the representation: under a semantics whose recompute runs
  // with another FP8 flag than the forward did, the twin saved fp32 where the original had
  // saved FP8 or the other way round, and backward computes from what it has.
  void take_saved(NodeFunction& twin) override {
    auto& other = static_cast<LinearNode&>(twin);
    fp8_ = other.fp8_;
    input_ = other.input_;
    weight_ = other.weight_;
    input_fp8_ = other.input_fp8_;
    weight_fp8_ = other.weight_fp8_;
  }

  bool is_twin(const NodeFunction& twin) const override {
    const auto* other = dynamic_cast<const LinearNode*>(&twin);
    return other != nullptr && &other->module_ == &module_;
  }

  bool has_saved() const { return fp8_ ? !input_fp8_.codes.empty() : !input_.values.empty(); }

  Matrix input_, weight_;             // fp32 path
  Fp8Matrix input_fp8_, weight_fp8_;  // FP8 path

 private:
  void add_weight_grad(const Matrix& dw) {
    Matrix& grad = module_.weight_grad_;
    for (std::size_t i = 0; i < grad.values.size(); ++i) grad.values[i] += dw.values[i];
  }

  Linear& module_;
  bool fp8_;
};

Linear::Linear(Context& context, const std::string& name, std::size_t in_features, std::size_t out_features,
               std::uint64_t seed)
    : context_(context),
      id_(context.add_module(name)),
      weight_(out_features, in_features),
      weight_grad_(out_features, in_features) {
  if (in_features == 0 || out_features == 0) throw std::invalid_argument(fmt::format("Linear {}: a dimension is 0", name));
  std::mt19937_64 random(seed);
  const float bound = 1.0f / std::sqrt(static_cast<float>(in_features));
  std::uniform_real_distribution<float> uniform(-bound, bound);
  for (float& w : weight_.values) w = uniform(random);
}

Matrix Linear::forward(const Matrix& x) {
  if (x.cols != weight_.cols) {
    throw std::invalid_argument(
        fmt::format("Linear {}: input has {} features, expected {}", name(), x.cols, weight_.cols));
  }
  require_finite(x, fmt::format("Linear {}: input", name()));
  require_finite(weight_, fmt::format("Linear {}: weight", name()));
  return context_.run_module(id_, [&](bool fp8) {
    auto node = std::make_shared<LinearNode>(*this, fp8);
    if (!fp8) {
      node->input_ = x;
      node->weight_ = weight_;
      return std::make_pair(matmul_nt(x, weight_), std::shared_ptr<NodeFunction>(node));
    }
    ModuleMeta& meta = context_.meta(id_);
    const kernels::Format format = context_.recipe().forward_format();
    node->input_fp8_ = context_.backend().cast_transpose(x, meta.forward.scale[0], format, meta.forward.amax(0, 0));
    node->weight_fp8_ =
        context_.backend().cast_transpose(weight_, meta.forward.scale[1], format, meta.forward.amax(0, 1));
    const Fp8Matrix& a = node->input_fp8_;
    const Fp8Matrix& b = node->weight_fp8_;
    Matrix y = context_.backend().gemm_tn(a.codes.data(), a.rows, a.format, a.scale_inv, b.codes.data(), b.rows,
                                          b.format, b.scale_inv, a.cols);
    return std::make_pair(std::move(y), std::shared_ptr<NodeFunction>(node));
  });
}

}  // namespace fp8sm::runtime
