// The device backend's class (device_backend.hpp makes one). Its members are defined by job, one
// file each, so that each reads alone:
//   device_backend.cpp           construction, and what it answers about itself
//   device_backend_memory.cpp    device memory: tensors made there, the program's values going up
//   device_backend_launches.cpp  the operations: one kernel launch (or GEMM) each
//   device_backend_meta.cpp      the FP8 metas: fresh ones, and spec §6's update of a key
// Internal to those files: not part of the API a training program includes.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kernels/cuda/device.hpp"
#include "runtime/backend.hpp"
#include "runtime/device_backend_memory.hpp"

namespace fp8sm::runtime::device_detail {

// The device arrays a key's update reads (scale_update.cu): its histories' and scales' device
// addresses, the prefix sums of its slots, and room for its amaxes. The live metas never move
// (context_hooks.cpp copies into them), so these are uploaded once per key and reused.
struct KeyArrays {
  KeyArrays(const std::shared_ptr<Session>& session, std::size_t tensors, std::size_t total)
      : histories(session, tensors), scales(session, tensors), slot_begin(session, tensors + 1), amaxes(session, total) {}
  SessionMemory<float*> histories, scales;
  SessionMemory<unsigned> slot_begin;
  SessionMemory<float> amaxes;
};

class DeviceBackend final : public Backend {
 public:
  DeviceBackend(std::unique_ptr<kernels::cuda::Device> device, std::string name, void* stream);

  // What it is (device_backend.cpp).
  std::string name() const override;
  Traffic traffic() const override;
  void synchronize() override;

  // Device memory (device_backend_memory.cpp).
  Matrix to_backend(Matrix m) override;
  Matrix zeros(std::size_t rows, std::size_t cols) override;
  Indices indices(std::vector<int> values) override;

  // The operations (device_backend_launches.cpp).
  Fp8Matrix cast_transpose(const Matrix& x, MetaTensors& meta, std::size_t slot, kernels::Format format) override;
  Matrix gemm_tn(const Fp8Matrix& a, bool a_transposed, const Fp8Matrix& b, bool b_transposed) override;
  Matrix matmul_nt(const Matrix& a, const Matrix& b) override;
  Matrix transpose(const Matrix& a) override;
  Matrix relu(const Matrix& x) override;
  Matrix relu_backward(const Matrix& x, const Matrix& dy) override;
  Matrix add(const Matrix& a, const Matrix& b) override;
  void add_into(Matrix& sum, const Matrix& term) override;
  void sgd(Matrix& w, const Matrix& g, float rate) override;
  void zero(Matrix& m) override;
  Matrix gelu(const Matrix& x) override;
  Matrix gelu_backward(const Matrix& x, const Matrix& dy) override;
  Matrix layer_norm(const Matrix& x, const Matrix& gamma, const Matrix& beta, float eps, Matrix& mean,
                    Matrix& rstd) override;
  Matrix layer_norm_backward(const Matrix& x, const Matrix& dy, const Matrix& gamma, const Matrix& mean,
                             const Matrix& rstd, Matrix& dgamma, Matrix& dbeta) override;
  Matrix causal_attention(const Matrix& qkv, std::size_t sequence_length, Matrix& probabilities) override;
  Matrix causal_attention_backward(const Matrix& qkv, const Matrix& probabilities, const Matrix& dout,
                                   std::size_t sequence_length) override;
  Matrix cross_entropy(const Matrix& logits, const Indices& targets, Matrix& probabilities) override;
  Matrix cross_entropy_backward(const Matrix& probabilities, const Indices& targets, const Matrix& dloss) override;
  Matrix embedding(const Matrix& table, const Indices& tokens) override;
  void embedding_backward(const Matrix& dy, const Indices& tokens, Matrix& table_grad) override;
  void adam(Matrix& w, const Matrix& g, Matrix& m, Matrix& v, const AdamStep& k) override;

  // The FP8 metas (device_backend_meta.cpp).
  MetaTensors fresh_meta(std::size_t history_length, std::size_t slots) override;
  void discard_current_amax(MetaTensors& meta) override;
  void reduce_and_update(const std::vector<MetaTensors*>& metas, AmaxReductionGroup* group, bool reduce_amax,
                         const kernels::ScaleUpdateRecipe& recipe) override;

 private:
  kernels::cuda::Device& device() const { return *session_->device; }
  void* stream() const { return session_->stream; }

  // Device memory (device_backend_memory.cpp). A rows x cols matrix in device memory (zeroed).
  Matrix empty(std::size_t rows, std::size_t cols);
  // The device memory of a matrix this backend made; anything else is a bug of the runtime
  // (every host matrix enters through to_backend).
  float* pointer(const Matrix& m) const;
  const DeviceFp8& fp8(const Fp8Matrix& m) const;
  const int* ints(const Indices& indices) const;

  // The device arrays of the key `metas` (device_backend_meta.cpp), uploaded the first time.
  KeyArrays& key_arrays(const std::vector<MetaTensors*>& metas);

  std::shared_ptr<Session> session_;
  std::string name_;
  std::map<std::vector<const void*>, std::unique_ptr<KeyArrays>> keys_;
};

}  // namespace fp8sm::runtime::device_detail
