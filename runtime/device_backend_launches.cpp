// The device backend's operations (device_backend_impl.hpp): each one kernel launch (or GEMM) on
// the backend's stream, into device memory made for its result; the same operations as the CPU
// backend's (backend.cpp), bit for bit where the reference GEMM computes.
//
// GEMM: the device's fast GEMM (cuBLASLt on a GPU backend "cuda") where it takes the problem;
// otherwise the bit-exact reference kernel, so that results equal the CPU backend's bit for bit.
#include <fmt/core.h>

#include <cstdint>
#include <stdexcept>

#include "runtime/device_backend_impl.hpp"

namespace fp8sm::runtime::device_detail {

namespace {

// The rows a loss's mean is over: those whose target is not negative (Device::cross_entropy),
// counted where the targets are kept too, on the host.
std::size_t counted(const Indices& targets) {
  std::size_t n = 0;
  for (int t : targets.values) n += t >= 0 ? 1 : 0;
  return n;
}

}  // namespace

Fp8Matrix DeviceBackend::cast_transpose(const Matrix& x, MetaTensors& meta, std::size_t slot, kernels::Format format) {
  if (slot >= meta.slots) throw std::logic_error(fmt::format("cast_transpose: slot {} of {}", slot, meta.slots));
  Fp8Matrix out;
  out.rows = x.rows;
  out.cols = x.cols;
  out.format = format;
  auto values = std::make_shared<DeviceFp8>(session_, x.size());
  // The slot's scale and its current amax (row 0 of the history) are read and folded on the
  // device; the cast leaves 1 / scale beside its codes.
  device().cast_transpose(pointer(x), false, x.rows, x.cols, pointer(meta.scale) + slot, format, values->codes.get(),
                          values->transposed.get(), pointer(meta.amax_history) + slot, values->scale_inv.get(),
                          stream());
  out.device = std::move(values);
  return out;
}

Matrix DeviceBackend::gemm_tn(const Fp8Matrix& a, bool a_transposed, const Fp8Matrix& b, bool b_transposed) {
  const auto [m, n, k] = gemm_shape(a, a_transposed, b, b_transposed);
  const DeviceFp8& da = fp8(a);
  const DeviceFp8& db = fp8(b);
  const std::uint8_t* pa = a_transposed ? da.transposed.get() : da.codes.get();
  const std::uint8_t* pb = b_transposed ? db.transposed.get() : db.codes.get();
  Matrix c = empty(m, n);
  if (device().takes_fast_gemm(m, n, k, a.format, b.format)) {
    device().gemm_tn_fast(pa, a.format, da.scale_inv.get(), pb, b.format, db.scale_inv.get(), m, n, k, pointer(c),
                          stream());
  } else {
    device().gemm_tn_reference(pa, a.format, da.scale_inv.get(), pb, b.format, db.scale_inv.get(), m, n, k,
                               pointer(c), stream());
  }
  return c;
}

Matrix DeviceBackend::matmul_nt(const Matrix& a, const Matrix& b) {
  if (a.cols != b.cols) throw std::invalid_argument("matmul_nt: inner dimensions differ");
  Matrix c = empty(a.rows, b.rows);
  device().matmul_nt(pointer(a), pointer(b), a.rows, b.rows, a.cols, pointer(c), stream());
  return c;
}

Matrix DeviceBackend::transpose(const Matrix& a) {
  Matrix t = empty(a.cols, a.rows);
  device().transpose(pointer(a), a.rows, a.cols, pointer(t), stream());
  return t;
}

Matrix DeviceBackend::relu(const Matrix& x) {
  Matrix y = empty(x.rows, x.cols);
  device().relu(pointer(x), x.size(), pointer(y), stream());
  return y;
}

Matrix DeviceBackend::relu_backward(const Matrix& x, const Matrix& dy) {
  require_same_size(x, dy, "relu_backward");
  Matrix dx = empty(dy.rows, dy.cols);
  device().relu_backward(pointer(x), pointer(dy), dy.size(), pointer(dx), stream());
  return dx;
}

Matrix DeviceBackend::add(const Matrix& a, const Matrix& b) {
  require_same_size(a, b, "add");
  Matrix sum = empty(a.rows, a.cols);
  device().add(pointer(a), pointer(b), a.size(), pointer(sum), stream());
  return sum;
}

void DeviceBackend::add_into(Matrix& sum, const Matrix& term) {
  require_same_size(sum, term, "add_into");
  device().add(pointer(sum), pointer(term), sum.size(), pointer(sum), stream());
}

void DeviceBackend::sgd(Matrix& w, const Matrix& g, float rate) {
  require_same_size(w, g, "sgd");
  device().sgd(pointer(w), pointer(g), rate, w.size(), stream());
}

void DeviceBackend::zero(Matrix& m) { device().zero(pointer(m), m.size() * sizeof(float), stream()); }

Matrix DeviceBackend::gelu(const Matrix& x) {
  Matrix y = empty(x.rows, x.cols);
  device().gelu(pointer(x), x.size(), pointer(y), stream());
  return y;
}

Matrix DeviceBackend::gelu_backward(const Matrix& x, const Matrix& dy) {
  require_same_size(x, dy, "gelu_backward");
  Matrix dx = empty(dy.rows, dy.cols);
  device().gelu_backward(pointer(x), pointer(dy), dy.size(), pointer(dx), stream());
  return dx;
}

Matrix DeviceBackend::layer_norm(const Matrix& x, const Matrix& gamma, const Matrix& beta, float eps, Matrix& mean,
                                 Matrix& rstd) {
  Matrix y = empty(x.rows, x.cols);
  mean = empty(x.rows, 1);
  rstd = empty(x.rows, 1);
  device().layer_norm(pointer(x), x.rows, x.cols, pointer(gamma), pointer(beta), eps, pointer(y), pointer(mean),
                      pointer(rstd), stream());
  return y;
}

Matrix DeviceBackend::layer_norm_backward(const Matrix& x, const Matrix& dy, const Matrix& gamma, const Matrix& mean,
                                          const Matrix& rstd, Matrix& dgamma, Matrix& dbeta) {
  require_same_size(x, dy, "layer_norm_backward");
  Matrix dx = empty(x.rows, x.cols);
  device().layer_norm_backward(pointer(x), pointer(dy), x.rows, x.cols, pointer(gamma), pointer(mean),
                               pointer(rstd), pointer(dx), pointer(dgamma), pointer(dbeta), stream());
  return dx;
}

Matrix DeviceBackend::causal_attention(const Matrix& qkv, std::size_t sequence_length, Matrix& probabilities) {
  const std::size_t sequences = qkv.rows / sequence_length;
  Matrix out = empty(qkv.rows, qkv.cols / 3);
  probabilities = empty(sequences * sequence_length, sequence_length);
  device().causal_attention(pointer(qkv), sequences, sequence_length, qkv.cols / 3, pointer(out),
                            pointer(probabilities), stream());
  return out;
}

Matrix DeviceBackend::causal_attention_backward(const Matrix& qkv, const Matrix& probabilities, const Matrix& dout,
                                                std::size_t sequence_length) {
  const std::size_t sequences = qkv.rows / sequence_length;
  Matrix dqkv = empty(qkv.rows, qkv.cols);
  SessionMemory<float> scratch(session_, sequences * sequence_length);
  device().causal_attention_backward(pointer(qkv), pointer(probabilities), pointer(dout), sequences, sequence_length,
                                     qkv.cols / 3, pointer(dqkv), scratch.get(), stream());
  return dqkv;
}

Matrix DeviceBackend::cross_entropy(const Matrix& logits, const Indices& targets, Matrix& probabilities) {
  probabilities = empty(logits.rows, logits.cols);
  Matrix loss = empty(1, 1);
  SessionMemory<float> terms(session_, logits.rows);
  device().cross_entropy(pointer(logits), logits.rows, logits.cols, ints(targets), counted(targets),
                         pointer(probabilities), terms.get(), pointer(loss), stream());
  return loss;
}

Matrix DeviceBackend::cross_entropy_backward(const Matrix& probabilities, const Indices& targets, const Matrix& dloss) {
  Matrix dlogits = empty(probabilities.rows, probabilities.cols);
  device().cross_entropy_backward(pointer(probabilities), probabilities.rows, probabilities.cols, ints(targets),
                                  counted(targets), pointer(dloss), pointer(dlogits), stream());
  return dlogits;
}

Matrix DeviceBackend::embedding(const Matrix& table, const Indices& tokens) {
  Matrix y = empty(tokens.values.size(), table.cols);
  device().embedding(pointer(table), ints(tokens), tokens.values.size(), table.cols, pointer(y), stream());
  return y;
}

void DeviceBackend::embedding_backward(const Matrix& dy, const Indices& tokens, Matrix& table_grad) {
  device().embedding_backward(pointer(dy), ints(tokens), tokens.values.size(), table_grad.cols, pointer(table_grad),
                              stream());
}

void DeviceBackend::adam(Matrix& w, const Matrix& g, Matrix& m, Matrix& v, const AdamStep& k) {
  require_same_size(w, g, "adam");
  device().adam(pointer(w), pointer(g), pointer(m), pointer(v), w.size(),
                {k.beta1, k.one_minus_beta1, k.beta2, k.one_minus_beta2, k.rate, k.correction1, k.correction2,
                 k.epsilon},
                stream());
}

}  // namespace fp8sm::runtime::device_detail
