// Where the numbers are computed. The runtime decides what to compute (asking the state
// machine); a Backend computes it, and keeps what it computes where it computes: the CPU
// reference (kernels/) in host memory, a device backend (device_backend.hpp) in device memory,
// so that a training step on a GPU moves no tensor between the host and the device.
//
// The base class's operations are the CPU's (host matrices); a device backend overrides every
// one of them for its own matrices, bit for bit the same results.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/fp8.hpp"
#include "kernels/scale_update.hpp"
#include "kernels/scaling_meta.hpp"
#include "runtime/amax_reduction.hpp"
#include "runtime/matrix.hpp"

namespace fp8sm::runtime {

// An FP8 tensor's codes in device memory (a device backend's).
class Fp8DeviceValues {
 public:
  virtual ~Fp8DeviceValues() = default;
};

// An FP8 tensor as a cast leaves it: the codes, their transpose (the other GEMM operand
// layout), and the scale_inv that dequantizes both: host vectors on the CPU, `device` on a
// device backend (where scale_inv stays on the device too).
struct Fp8Matrix {
  std::size_t rows = 0;
  std::size_t cols = 0;
  kernels::Format format = kernels::Format::E4M3;
  float scale_inv = 1.0f;
  std::vector<std::uint8_t> codes;       // rows x cols
  std::vector<std::uint8_t> transposed;  // cols x rows
  std::shared_ptr<const Fp8DeviceValues> device;

  bool held() const { return device != nullptr || !codes.empty(); }
};

// Integer indices (tokens, target classes) where the backend computes; kept on the host too
// (the runtime checks them there and counts a loss's rows).
class DeviceIndices {
 public:
  virtual ~DeviceIndices() = default;
};
struct Indices {
  std::vector<int> values;
  std::shared_ptr<const DeviceIndices> device;
};

// One Adam step's constants (the optimizer's, as floats the way its CPU loop rounds them).
struct AdamStep {
  float beta1, one_minus_beta1, beta2, one_minus_beta2, rate, correction1, correction2, epsilon;
};

// The delayed-scaling state of one module in one direction (kernels::ScalingMeta's fields)
// where the backend keeps it: amax_history is history_length x slots (row 0 the current amaxes),
// scale 1 x slots.
struct MetaTensors {
  std::size_t history_length = 1;
  std::size_t slots = 0;
  Matrix amax_history;
  Matrix scale;

  // On the host, as the kernels' reference takes it (a download for a device backend).
  kernels::ScalingMeta to_host() const;
};

// What crossed between the host and a device backend's device, and how often the host waited
// for it (kernels::cuda::Device::Traffic); all zero on the CPU.
struct Traffic {
  std::size_t uploads = 0, downloads = 0;
  std::size_t upload_bytes = 0, download_bytes = 0;
  std::size_t device_copies = 0;
  std::size_t synchronizations = 0;
};

// What happened between two readings of Backend::traffic().
inline Traffic since(const Traffic& before, const Traffic& now) {
  return {now.uploads - before.uploads,
          now.downloads - before.downloads,
          now.upload_bytes - before.upload_bytes,
          now.download_bytes - before.download_bytes,
          now.device_copies - before.device_copies,
          now.synchronizations - before.synchronizations};
}

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;

  // Residence. to_backend brings a host matrix to where this backend computes (a device
  // backend uploads it, after checking it is finite: a program's inputs and gradient seeds);
  // a matrix already there is returned as it is. A matrix in the memory of another backend (a
  // device matrix given to the CPU backend, or another device backend's) is refused with
  // MisuseError: its to_host() brings it back first.
  virtual Matrix to_backend(Matrix m);
  virtual Matrix zeros(std::size_t rows, std::size_t cols) { return Matrix(rows, cols); }
  virtual Traffic traffic() const { return {}; }
  // Waits until everything issued so far has run (a device backend's stream; nothing to wait
  // for on the CPU). Never needed for correctness: for timing from the host.
  virtual void synchronize() {}

  // q = fp8(x * scale) and its transpose with `meta`'s scale of `slot`; the slot's current amax
  // (row 0) := max(amax, max|x|).
  virtual Fp8Matrix cast_transpose(const Matrix& x, MetaTensors& meta, std::size_t slot, kernels::Format format);
  // C (m x n) = dequant(A) dequant(B)ᵀ with fp32 accumulation, A and B as m x k and n x k codes:
  // `a`'s codes, or its transposed codes when `a_transposed` (then m = a.cols, k = a.rows);
  // the same for `b`.
  virtual Matrix gemm_tn(const Fp8Matrix& a, bool a_transposed, const Fp8Matrix& b, bool b_transposed);

  // fp32: C = A Bᵀ (k ascending), Aᵀ, max(x, 0) and its backward (x the input), sums, SGD.
  virtual Matrix matmul_nt(const Matrix& a, const Matrix& b);
  virtual Matrix transpose(const Matrix& a);
  virtual Matrix relu(const Matrix& x);
  virtual Matrix relu_backward(const Matrix& x, const Matrix& dy);
  virtual Matrix add(const Matrix& a, const Matrix& b);
  virtual void add_into(Matrix& sum, const Matrix& term);
  // w := w - rate * g.
  virtual void sgd(Matrix& w, const Matrix& g, float rate);
  virtual void zero(Matrix& m);

  // The transformer's other layers (kernels/layer_math.hpp's float versions; on a device
  // backend its kernels, layers.cu). layer_norm gives y and each row's mean and rstd (rows x 1);
  // its backward gives dx and adds to dgamma and dbeta. causal_attention gives the output and
  // the probabilities its backward reads. cross_entropy gives the 1 x 1 mean loss of the rows
  // whose target is not negative, and the probabilities; its backward reads the loss's
  // gradient (1 x 1) where the backend keeps it. embedding_backward adds to table_grad.
  virtual Indices indices(std::vector<int> values) { return {std::move(values), nullptr}; }
  virtual Matrix gelu(const Matrix& x);
  virtual Matrix gelu_backward(const Matrix& x, const Matrix& dy);
  virtual Matrix layer_norm(const Matrix& x, const Matrix& gamma, const Matrix& beta, float eps, Matrix& mean,
                            Matrix& rstd);
  virtual Matrix layer_norm_backward(const Matrix& x, const Matrix& dy, const Matrix& gamma, const Matrix& mean,
                                     const Matrix& rstd, Matrix& dgamma, Matrix& dbeta);
  virtual Matrix causal_attention(const Matrix& qkv, std::size_t sequence_length, Matrix& probabilities);
  virtual Matrix causal_attention_backward(const Matrix& qkv, const Matrix& probabilities, const Matrix& dout,
                                           std::size_t sequence_length);
  virtual Matrix cross_entropy(const Matrix& logits, const Indices& targets, Matrix& probabilities);
  virtual Matrix cross_entropy_backward(const Matrix& probabilities, const Indices& targets, const Matrix& dloss);
  virtual Matrix embedding(const Matrix& table, const Indices& tokens);
  virtual void embedding_backward(const Matrix& dy, const Indices& tokens, Matrix& table_grad);
  // w, m and v updated by one Adam step from g.
  virtual void adam(Matrix& w, const Matrix& g, Matrix& m, Matrix& v, const AdamStep& step);

  // Metas: a module's fresh state (history 0, scale 1), row 0 := 0, and spec §6 steps 1-4 for
  // one registry key.
  virtual MetaTensors fresh_meta(std::size_t history_length, std::size_t slots);
  virtual void discard_current_amax(MetaTensors& meta);
  virtual void reduce_and_update(const std::vector<MetaTensors*>& metas, AmaxReductionGroup* group, bool reduce_amax,
                                 const kernels::ScaleUpdateRecipe& recipe);

 protected:
  // The checks every backend makes the same way. std::invalid_argument naming `what` unless a
  // and b have one shape.
  static void require_same_size(const Matrix& a, const Matrix& b, const char* what);
  // gemm_tn's m x n output over k, from its operands' layouts; std::invalid_argument unless
  // their inner dimensions agree.
  struct GemmShape {
    std::size_t m, n, k;
  };
  static GemmShape gemm_shape(const Fp8Matrix& a, bool a_transposed, const Fp8Matrix& b, bool b_transposed);
};

// The CPU reference backend (kernels/): bit-exact to spec §6.
std::unique_ptr<Backend> make_cpu_backend();

}  // namespace fp8sm::runtime
