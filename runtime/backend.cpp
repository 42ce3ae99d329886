// The Backend's operations on host matrices: the CPU reference (kernels/). A device backend
// overrides each for its own matrices.
#include "runtime/backend.hpp"

#include <fmt/core.h>

#include <cmath>
#include <stdexcept>
#include <utility>

#include "kernels/cast.hpp"
#include "kernels/gemm.hpp"
#include "kernels/layer_math.hpp"
#include "runtime/errors.hpp"

namespace fp8sm::runtime {

namespace {

void require_host(const Matrix& m, const char* what) {
  if (m.on_device()) throw std::logic_error(fmt::format("{}: a device matrix on the CPU backend", what));
}

}  // namespace

void Backend::require_same_size(const Matrix& a, const Matrix& b, const char* what) {
  if (a.rows != b.rows || a.cols != b.cols) {
    throw std::invalid_argument(fmt::format("{}: shapes {}x{} and {}x{} differ", what, a.rows, a.cols, b.rows, b.cols));
  }
}

Backend::GemmShape Backend::gemm_shape(const Fp8Matrix& a, bool a_transposed, const Fp8Matrix& b, bool b_transposed) {
  const std::size_t k = a_transposed ? a.rows : a.cols;
  if ((b_transposed ? b.rows : b.cols) != k) throw std::invalid_argument("gemm_tn: inner dimensions differ");
  return {a_transposed ? a.cols : a.rows, b_transposed ? b.cols : b.rows, k};
}

Matrix Backend::to_backend(Matrix m) {
  if (m.on_device()) {
    throw MisuseError(fmt::format("{}: a {} x {} matrix in device memory (another backend's): bring it to the host with "
                                  "to_host() first",
                                  name(), m.rows, m.cols));
  }
  return m;
}

kernels::ScalingMeta MetaTensors::to_host() const {
  kernels::ScalingMeta meta;
  meta.history_length = history_length;
  meta.amax_history = amax_history.to_host().values;
  meta.scale = scale.to_host().values;
  return meta;
}

Fp8Matrix Backend::cast_transpose(const Matrix& x, MetaTensors& meta, std::size_t slot, kernels::Format format) {
  require_host(x, "cast_transpose");
  Fp8Matrix out;
  out.rows = x.rows;
  out.cols = x.cols;
  out.format = format;
  out.codes.resize(x.size());
  out.transposed.resize(x.size());
  out.scale_inv = kernels::cast_transpose_to_fp8(x.values.data(), x.rows, x.cols, meta.scale.values.at(slot), format,
                                                 out.codes.data(), out.transposed.data(),
                                                 meta.amax_history.values.at(slot));
  return out;
}

Matrix Backend::gemm_tn(const Fp8Matrix& a, bool a_transposed, const Fp8Matrix& b, bool b_transposed) {
  const auto [m, n, k] = gemm_shape(a, a_transposed, b, b_transposed);
  Matrix c(m, n);
  kernels::gemm_tn({(a_transposed ? a.transposed : a.codes).data(), m, a.format, a.scale_inv},
                   {(b_transposed ? b.transposed : b.codes).data(), n, b.format, b.scale_inv}, k, c.values.data());
  return c;
}

Matrix Backend::matmul_nt(const Matrix& a, const Matrix& b) {
  require_host(a, "matmul_nt");
  require_host(b, "matmul_nt");
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

Matrix Backend::transpose(const Matrix& a) {
  require_host(a, "transpose");
  Matrix t(a.cols, a.rows);
  for (std::size_t i = 0; i < a.rows; ++i) {
    for (std::size_t j = 0; j < a.cols; ++j) t.at(j, i) = a.at(i, j);
  }
  return t;
}

Matrix Backend::relu(const Matrix& x) {
  require_host(x, "relu");
  Matrix y = x;
  for (float& v : y.values) v = v > 0.0f ? v : 0.0f;
  return y;
}

Matrix Backend::relu_backward(const Matrix& x, const Matrix& dy) {
  require_host(x, "relu_backward");
  require_same_size(x, dy, "relu_backward");
  Matrix dx(dy.rows, dy.cols);
  for (std::size_t i = 0; i < dx.values.size(); ++i) dx.values[i] = x.values[i] > 0.0f ? dy.values[i] : 0.0f;
  return dx;
}

Matrix Backend::add(const Matrix& a, const Matrix& b) {
  Matrix sum = a;
  add_into(sum, b);
  return sum;
}

void Backend::add_into(Matrix& sum, const Matrix& term) {
  require_host(sum, "add_into");
  require_host(term, "add_into");
  require_same_size(sum, term, "add_into");
  for (std::size_t i = 0; i < sum.values.size(); ++i) sum.values[i] += term.values[i];
}

void Backend::sgd(Matrix& w, const Matrix& g, float rate) {
  require_host(w, "sgd");
  require_host(g, "sgd");
  require_same_size(w, g, "sgd");
  for (std::size_t i = 0; i < w.values.size(); ++i) w.values[i] -= rate * g.values[i];
}

void Backend::zero(Matrix& m) {
  require_host(m, "zero");
  for (float& v : m.values) v = 0.0f;
}

Matrix Backend::gelu(const Matrix& x) {
  require_host(x, "gelu");
  Matrix y(x.rows, x.cols);
  kernels::gelu_forward(x.values.data(), y.values.data(), y.values.size());
  return y;
}

Matrix Backend::gelu_backward(const Matrix& x, const Matrix& dy) {
  require_host(x, "gelu_backward");
  require_same_size(x, dy, "gelu_backward");
  Matrix dx(dy.rows, dy.cols);
  kernels::gelu_backward(x.values.data(), dy.values.data(), dx.values.data(), dx.values.size());
  return dx;
}

Matrix Backend::layer_norm(const Matrix& x, const Matrix& gamma, const Matrix& beta, float eps, Matrix& mean,
                           Matrix& rstd) {
  require_host(x, "layer_norm");
  Matrix y(x.rows, x.cols);
  mean = Matrix(x.rows, 1);
  rstd = Matrix(x.rows, 1);
  kernels::layer_norm_forward(x.values.data(), x.rows, x.cols, gamma.values.data(), beta.values.data(), eps,
                              y.values.data(), mean.values.data(), rstd.values.data());
  return y;
}

Matrix Backend::layer_norm_backward(const Matrix& x, const Matrix& dy, const Matrix& gamma, const Matrix& mean,
                                    const Matrix& rstd, Matrix& dgamma, Matrix& dbeta) {
  require_host(dy, "layer_norm_backward");
  require_same_size(x, dy, "layer_norm_backward");
  Matrix dx(x.rows, x.cols);
  kernels::layer_norm_backward(x.values.data(), dy.values.data(), x.rows, x.cols, gamma.values.data(),
                               mean.values.data(), rstd.values.data(), dx.values.data(), dgamma.values.data(),
                               dbeta.values.data());
  return dx;
}

Matrix Backend::causal_attention(const Matrix& qkv, std::size_t sequence_length, Matrix& probabilities) {
  require_host(qkv, "causal_attention");
  const std::size_t sequences = qkv.rows / sequence_length;
  Matrix out(qkv.rows, qkv.cols / 3);
  probabilities = Matrix(sequences * sequence_length, sequence_length);
  kernels::causal_attention_forward(qkv.values.data(), sequences, sequence_length, qkv.cols / 3, out.values.data(),
                                    probabilities.values.data());
  return out;
}

Matrix Backend::causal_attention_backward(const Matrix& qkv, const Matrix& probabilities, const Matrix& dout,
                                          std::size_t sequence_length) {
  require_host(dout, "causal_attention_backward");
  Matrix dqkv(qkv.rows, qkv.cols);
  kernels::causal_attention_backward(qkv.values.data(), probabilities.values.data(), dout.values.data(),
                                     qkv.rows / sequence_length, sequence_length, qkv.cols / 3, dqkv.values.data());
  return dqkv;
}

Matrix Backend::cross_entropy(const Matrix& logits, const Indices& targets, Matrix& probabilities) {
  require_host(logits, "cross_entropy");
  probabilities = Matrix(logits.rows, logits.cols);
  Matrix loss(1, 1);
  loss.values[0] = kernels::softmax_cross_entropy_forward(logits.values.data(), logits.rows, logits.cols,
                                                          targets.values.data(), probabilities.values.data());
  return loss;
}

Matrix Backend::cross_entropy_backward(const Matrix& probabilities, const Indices& targets, const Matrix& dloss) {
  require_host(dloss, "cross_entropy_backward");
  Matrix dlogits(probabilities.rows, probabilities.cols);
  kernels::softmax_cross_entropy_backward(probabilities.values.data(), probabilities.rows, probabilities.cols,
                                          targets.values.data(), dloss.values.at(0), dlogits.values.data());
  return dlogits;
}

Matrix Backend::embedding(const Matrix& table, const Indices& tokens) {
  require_host(table, "embedding");
  Matrix y(tokens.values.size(), table.cols);
  for (std::size_t r = 0; r < tokens.values.size(); ++r) {
    for (std::size_t c = 0; c < table.cols; ++c) y.at(r, c) = table.at(static_cast<std::size_t>(tokens.values[r]), c);
  }
  return y;
}

void Backend::embedding_backward(const Matrix& dy, const Indices& tokens, Matrix& table_grad) {
  require_host(dy, "embedding_backward");
  for (std::size_t r = 0; r < tokens.values.size(); ++r) {
    const auto t = static_cast<std::size_t>(tokens.values[r]);
    for (std::size_t c = 0; c < table_grad.cols; ++c) table_grad.at(t, c) += dy.at(r, c);
  }
}

void Backend::adam(Matrix& w, const Matrix& g, Matrix& m, Matrix& v, const AdamStep& k) {
  require_host(w, "adam");
  require_same_size(w, g, "adam");
  for (std::size_t i = 0; i < w.values.size(); ++i) {
    const float grad = g.values[i];
    m.values[i] = k.beta1 * m.values[i] + k.one_minus_beta1 * grad;
    v.values[i] = k.beta2 * v.values[i] + k.one_minus_beta2 * grad * grad;
    w.values[i] -= k.rate * (m.values[i] / k.correction1) / (std::sqrt(v.values[i] / k.correction2) + k.epsilon);
  }
}

MetaTensors Backend::fresh_meta(std::size_t history_length, std::size_t slots) {
  const kernels::ScalingMeta fresh = kernels::ScalingMeta::fresh(history_length, slots);
  MetaTensors meta;
  meta.history_length = history_length;
  meta.slots = slots;
  meta.amax_history = Matrix(history_length, slots);
  meta.amax_history.values = fresh.amax_history;
  meta.scale = Matrix(1, slots);
  meta.scale.values = fresh.scale;
  return meta;
}

void Backend::discard_current_amax(MetaTensors& meta) {
  require_host(meta.amax_history, "discard_current_amax");
  for (std::size_t slot = 0; slot < meta.slots; ++slot) meta.amax_history.values[slot] = 0.0f;
}

void Backend::reduce_and_update(const std::vector<MetaTensors*>& metas, AmaxReductionGroup* group, bool reduce_amax,
                                const kernels::ScaleUpdateRecipe& recipe) {
  // The reference works on kernels::ScalingMeta: the vectors move in and back out (also when
  // it throws), nothing is copied.
  std::vector<kernels::ScalingMeta> views(metas.size());
  std::vector<kernels::ScalingMeta*> pointers;
  for (std::size_t i = 0; i < metas.size(); ++i) {
    require_host(metas[i]->amax_history, "reduce_and_update");
    views[i].history_length = metas[i]->history_length;
    views[i].amax_history = std::move(metas[i]->amax_history.values);
    views[i].scale = std::move(metas[i]->scale.values);
    pointers.push_back(&views[i]);
  }
  const auto move_back = [&] {
    for (std::size_t i = 0; i < metas.size(); ++i) {
      metas[i]->amax_history.values = std::move(views[i].amax_history);
      metas[i]->scale.values = std::move(views[i].scale);
    }
  };
  try {
    runtime::reduce_and_update(pointers, group, reduce_amax, recipe);
  } catch (...) {
    move_back();
    throw;
  }
  move_back();
}

}  // namespace fp8sm::runtime
