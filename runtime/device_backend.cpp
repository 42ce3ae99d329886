// The same operations as the CPU backend, computed by the kernels of kernels/cuda/ on a Device,
// on tensors that stay in device memory: a matrix this backend makes holds device memory
// (DeviceFloats), an FP8 tensor its codes, their transpose and its scale_inv there, a module's
// meta its history and scales there. Every operation is issued on the backend's one stream, and
// nothing in a step copies to or from the host or waits for the device, except what the
// program asks for: its inputs and gradient seeds going in (to_backend), what it reads back
// (Matrix::to_host), and a key's amaxes when its group reduces on the host (MPI).
//
// GEMM: the device's fast GEMM (cuBLASLt on a GPU backend "cuda") where it takes the problem;
// otherwise the bit-exact reference kernel, so that results equal the CPU backend's bit for bit.
#include "runtime/device_backend.hpp"

#include <fmt/core.h>

#include <cstdint>
#include <map>
#include <stdexcept>
#include <utility>
#include <vector>

#include "kernels/cuda/device_buffer.hpp"
#include "kernels/cuda/host_emulation/emulated_device.hpp"
#include "runtime/errors.hpp"

namespace fp8sm::runtime {

namespace {

using kernels::cuda::Device;
using kernels::cuda::DeviceBuffer;

// The device and the stream every tensor of one backend lives on. Shared by the backend and
// by every matrix it made: a matrix may outlive its context (a training's results), and its
// memory must still be released on a live stream of a live device.
struct Session {
  Session(std::unique_ptr<Device> d, void* user_stream)
      : device(std::move(d)), stream(user_stream != nullptr ? user_stream : device->create_stream()),
        owns_stream(user_stream == nullptr) {
    device->require_stream(stream);
  }
  ~Session() {
    if (owns_stream) device->destroy_stream(stream);
  }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  std::unique_ptr<Device> device;
  void* stream;
  bool owns_stream;
};

// Device memory of `count` values of T on the session's stream.
template <class T>
class SessionMemory {
 public:
  SessionMemory(std::shared_ptr<Session> session, std::size_t count)
      : session_(std::move(session)),
        data_(static_cast<T*>(session_->device->allocate(count * sizeof(T), session_->stream))),
        count_(count) {}
  ~SessionMemory() { session_->device->release(data_, session_->stream); }
  SessionMemory(const SessionMemory&) = delete;
  SessionMemory& operator=(const SessionMemory&) = delete;
  T* get() const { return data_; }
  std::size_t count() const { return count_; }
  const std::shared_ptr<Session>& session() const { return session_; }

 private:
  std::shared_ptr<Session> session_;
  T* data_;
  std::size_t count_;
};

class DeviceFloats final : public DeviceValues {
 public:
  DeviceFloats(std::shared_ptr<Session> session, std::size_t count) : memory_(std::move(session), count) {}
  std::unique_ptr<DeviceValues> clone() const override {
    auto copy = std::make_unique<DeviceFloats>(memory_.session(), memory_.count());
    copy->copy_from(*this);
    return copy;
  }
  void copy_from(const DeviceValues& other) override {
    const auto& from = static_cast<const DeviceFloats&>(other);
    Session& s = *memory_.session();
    s.device->copy(memory_.get(), from.get(), memory_.count() * sizeof(float), s.stream);
  }
  void download(float* host) const override {
    Session& s = *memory_.session();
    s.device->download(host, memory_.get(), memory_.count() * sizeof(float), s.stream);
  }
  std::size_t count() const override { return memory_.count(); }
  float* get() const { return memory_.get(); }
  const std::shared_ptr<Session>& session() const { return memory_.session(); }

 private:
  SessionMemory<float> memory_;
};

class DeviceFp8 final : public Fp8DeviceValues {
 public:
  DeviceFp8(const std::shared_ptr<Session>& session, std::size_t count)
      : codes(session, count), transposed(session, count), scale_inv(session, 1) {}
  SessionMemory<std::uint8_t> codes, transposed;
  SessionMemory<float> scale_inv;
};

class DeviceInts final : public DeviceIndices {
 public:
  DeviceInts(const std::shared_ptr<Session>& session, std::size_t count) : memory(session, count) {}
  SessionMemory<int> memory;
};

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
  DeviceBackend(std::unique_ptr<Device> device, std::string name, void* stream)
      : session_(std::make_shared<Session>(std::move(device), stream)), name_(std::move(name)) {}

  std::string name() const override { return name_; }

  Traffic traffic() const override {
    const Device::Traffic& t = device().traffic();
    return {t.uploads, t.downloads, t.upload_bytes, t.download_bytes, t.device_copies, t.synchronizations};
  }

  Matrix to_backend(Matrix m) override {
    if (m.on_device()) {
      const auto* values = dynamic_cast<const DeviceFloats*>(m.device.get());
      if (values == nullptr || values->session() != session_) {
        throw MisuseError(fmt::format("{}: a {} x {} matrix in the memory of another backend: bring it to the host "
                                      "with to_host() first",
                                      name_, m.rows, m.cols));
      }
      return m;
    }
    require_finite(m, fmt::format("{}: a matrix going to the device", name_));
    Matrix out = empty(m.rows, m.cols);
    device().upload(pointer(out), m.values.data(), m.values.size() * sizeof(float), stream());
    return out;
  }

  Matrix zeros(std::size_t rows, std::size_t cols) override { return empty(rows, cols); }

  void synchronize() override { device().synchronize(stream()); }

  Fp8Matrix cast_transpose(const Matrix& x, MetaTensors& meta, std::size_t slot, kernels::Format format) override {
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

  Matrix gemm_tn(const Fp8Matrix& a, bool a_transposed, const Fp8Matrix& b, bool b_transposed) override {
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

  Matrix matmul_nt(const Matrix& a, const Matrix& b) override {
    if (a.cols != b.cols) throw std::invalid_argument("matmul_nt: inner dimensions differ");
    Matrix c = empty(a.rows, b.rows);
    device().matmul_nt(pointer(a), pointer(b), a.rows, b.rows, a.cols, pointer(c), stream());
    return c;
  }

  Matrix transpose(const Matrix& a) override {
    Matrix t = empty(a.cols, a.rows);
    device().transpose(pointer(a), a.rows, a.cols, pointer(t), stream());
    return t;
  }

  Matrix relu(const Matrix& x) override {
    Matrix y = empty(x.rows, x.cols);
    device().relu(pointer(x), x.size(), pointer(y), stream());
    return y;
  }

  Matrix relu_backward(const Matrix& x, const Matrix& dy) override {
    require_same_size(x, dy, "relu_backward");
    Matrix dx = empty(dy.rows, dy.cols);
    device().relu_backward(pointer(x), pointer(dy), dy.size(), pointer(dx), stream());
    return dx;
  }

  Matrix add(const Matrix& a, const Matrix& b) override {
    require_same_size(a, b, "add");
    Matrix sum = empty(a.rows, a.cols);
    device().add(pointer(a), pointer(b), a.size(), pointer(sum), stream());
    return sum;
  }

  void add_into(Matrix& sum, const Matrix& term) override {
    require_same_size(sum, term, "add_into");
    device().add(pointer(sum), pointer(term), sum.size(), pointer(sum), stream());
  }

  void sgd(Matrix& w, const Matrix& g, float rate) override {
    require_same_size(w, g, "sgd");
    device().sgd(pointer(w), pointer(g), rate, w.size(), stream());
  }

  void zero(Matrix& m) override { device().zero(pointer(m), m.size() * sizeof(float), stream()); }

  Indices indices(std::vector<int> values) override {
    auto on_device = std::make_shared<DeviceInts>(session_, values.size());
    if (!values.empty()) {
      device().upload(on_device->memory.get(), values.data(), values.size() * sizeof(int), stream());
    }
    return {std::move(values), std::move(on_device)};
  }

  Matrix gelu(const Matrix& x) override {
    Matrix y = empty(x.rows, x.cols);
    device().gelu(pointer(x), x.size(), pointer(y), stream());
    return y;
  }

  Matrix gelu_backward(const Matrix& x, const Matrix& dy) override {
    require_same_size(x, dy, "gelu_backward");
    Matrix dx = empty(dy.rows, dy.cols);
    device().gelu_backward(pointer(x), pointer(dy), dy.size(), pointer(dx), stream());
    return dx;
  }

  Matrix layer_norm(const Matrix& x, const Matrix& gamma, const Matrix& beta, float eps, Matrix& mean,
                    Matrix& rstd) override {
    Matrix y = empty(x.rows, x.cols);
    mean = empty(x.rows, 1);
    rstd = empty(x.rows, 1);
    device().layer_norm(pointer(x), x.rows, x.cols, pointer(gamma), pointer(beta), eps, pointer(y), pointer(mean),
                        pointer(rstd), stream());
    return y;
  }

  Matrix layer_norm_backward(const Matrix& x, const Matrix& dy, const Matrix& gamma, const Matrix& mean,
                             const Matrix& rstd, Matrix& dgamma, Matrix& dbeta) override {
    require_same_size(x, dy, "layer_norm_backward");
    Matrix dx = empty(x.rows, x.cols);
    device().layer_norm_backward(pointer(x), pointer(dy), x.rows, x.cols, pointer(gamma), pointer(mean),
                                 pointer(rstd), pointer(dx), pointer(dgamma), pointer(dbeta), stream());
    return dx;
  }

  Matrix causal_attention(const Matrix& qkv, std::size_t sequence_length, Matrix& probabilities) override {
    const std::size_t sequences = qkv.rows / sequence_length;
    Matrix out = empty(qkv.rows, qkv.cols / 3);
    probabilities = empty(sequences * sequence_length, sequence_length);
    device().causal_attention(pointer(qkv), sequences, sequence_length, qkv.cols / 3, pointer(out),
                              pointer(probabilities), stream());
    return out;
  }

  Matrix causal_attention_backward(const Matrix& qkv, const Matrix& probabilities, const Matrix& dout,
                                   std::size_t sequence_length) override {
    const std::size_t sequences = qkv.rows / sequence_length;
    Matrix dqkv = empty(qkv.rows, qkv.cols);
    SessionMemory<float> scratch(session_, sequences * sequence_length);
    device().causal_attention_backward(pointer(qkv), pointer(probabilities), pointer(dout), sequences, sequence_length,
                                       qkv.cols / 3, pointer(dqkv), scratch.get(), stream());
    return dqkv;
  }

  Matrix cross_entropy(const Matrix& logits, const Indices& targets, Matrix& probabilities) override {
    probabilities = empty(logits.rows, logits.cols);
    Matrix loss = empty(1, 1);
    SessionMemory<float> terms(session_, logits.rows);
    device().cross_entropy(pointer(logits), logits.rows, logits.cols, ints(targets), counted(targets),
                           pointer(probabilities), terms.get(), pointer(loss), stream());
    return loss;
  }

  Matrix cross_entropy_backward(const Matrix& probabilities, const Indices& targets, const Matrix& dloss) override {
    Matrix dlogits = empty(probabilities.rows, probabilities.cols);
    device().cross_entropy_backward(pointer(probabilities), probabilities.rows, probabilities.cols, ints(targets),
                                    counted(targets), pointer(dloss), pointer(dlogits), stream());
    return dlogits;
  }

  Matrix embedding(const Matrix& table, const Indices& tokens) override {
    Matrix y = empty(tokens.values.size(), table.cols);
    device().embedding(pointer(table), ints(tokens), tokens.values.size(), table.cols, pointer(y), stream());
    return y;
  }

  void embedding_backward(const Matrix& dy, const Indices& tokens, Matrix& table_grad) override {
    device().embedding_backward(pointer(dy), ints(tokens), tokens.values.size(), table_grad.cols, pointer(table_grad),
                                stream());
  }

  void adam(Matrix& w, const Matrix& g, Matrix& m, Matrix& v, const AdamStep& k) override {
    require_same_size(w, g, "adam");
    device().adam(pointer(w), pointer(g), pointer(m), pointer(v), w.size(),
                  {k.beta1, k.one_minus_beta1, k.beta2, k.one_minus_beta2, k.rate, k.correction1, k.correction2,
                   k.epsilon},
                  stream());
  }

  MetaTensors fresh_meta(std::size_t history_length, std::size_t slots) override {
    MetaTensors meta = Backend::fresh_meta(history_length, slots);  // on the host, then up once
    meta.amax_history = to_backend(std::move(meta.amax_history));
    meta.scale = to_backend(std::move(meta.scale));
    return meta;
  }

  void discard_current_amax(MetaTensors& meta) override {
    device().zero(pointer(meta.amax_history), meta.slots * sizeof(float), stream());  // row 0
  }

  void reduce_and_update(const std::vector<MetaTensors*>& metas, AmaxReductionGroup* group, bool reduce_amax,
                         const kernels::ScaleUpdateRecipe& recipe) override {
    if (metas.empty()) return;
    for (const MetaTensors* m : metas) {
      if (m->history_length != metas.front()->history_length) {
        throw std::invalid_argument("reduce_and_update: the metas of one key must share one amax history length");
      }
    }
    KeyArrays& key = key_arrays(metas);
    const auto tensors = static_cast<unsigned>(metas.size());
    const auto total = static_cast<unsigned>(key.amaxes.count());
    // Steps 1 and 2: the current amaxes, reduced over the group where it is distributed.
    device().gather_amaxes(key.histories.get(), key.slot_begin.get(), tensors, total, key.amaxes.get(), stream());
    if (reduce_amax && group != nullptr && group->size() > 1) {
      if (auto* on_device = dynamic_cast<DeviceAmaxReduction*>(group)) {
        on_device->all_reduce_max_on_device(device(), key.amaxes.get(), total, stream());
      } else {
        // A host group (MPI): the amaxes go down and come back, the one copy a step may make.
        std::vector<float> amaxes(total);
        device().download(amaxes.data(), key.amaxes.get(), total * sizeof(float), stream());
        group->all_reduce_max(amaxes);
        if (amaxes.size() != total) {
          throw std::logic_error(fmt::format("amax reduction group {} returned {} amaxes for {}", group->name(),
                                             amaxes.size(), total));
        }
        device().upload(key.amaxes.get(), amaxes.data(), total * sizeof(float), stream());
      }
    }
    // Steps 3 and 4: every tensor of the key in one launch.
    device().scale_update(key.histories.get(), key.scales.get(), key.amaxes.get(), key.slot_begin.get(), tensors, total,
                          static_cast<unsigned>(metas.front()->history_length), recipe, stream());
  }

 private:
  Device& device() const { return *session_->device; }
  void* stream() const { return session_->stream; }

  // A rows x cols matrix in device memory (zeroed).
  Matrix empty(std::size_t rows, std::size_t cols) {
    Matrix m;
    m.rows = rows;
    m.cols = cols;
    m.device = std::make_unique<DeviceFloats>(session_, rows * cols);
    return m;
  }

  // The device memory of a matrix this backend made; anything else is a bug of the runtime
  // (every host matrix enters through to_backend).
  float* pointer(const Matrix& m) const {
    const auto* values = dynamic_cast<const DeviceFloats*>(m.device.get());
    if (values == nullptr) {
      throw std::logic_error(fmt::format("{}: a {}x{} matrix in host memory reached a device operation", name_, m.rows,
                                         m.cols));
    }
    return values->get();
  }

  const DeviceFp8& fp8(const Fp8Matrix& m) const {
    const auto* values = dynamic_cast<const DeviceFp8*>(m.device.get());
    if (values == nullptr) throw std::logic_error(fmt::format("{}: an FP8 tensor not made on the device", name_));
    return *values;
  }

  const int* ints(const Indices& indices) const {
    const auto* values = dynamic_cast<const DeviceInts*>(indices.device.get());
    if (values == nullptr) throw std::logic_error(fmt::format("{}: indices not on the device", name_));
    return values->memory.get();
  }

  static std::size_t counted(const Indices& targets) {
    std::size_t n = 0;
    for (int t : targets.values) n += t >= 0 ? 1 : 0;
    return n;
  }

  KeyArrays& key_arrays(const std::vector<MetaTensors*>& metas) {
    std::vector<const void*> id;
    std::vector<float*> histories, scales;
    std::vector<unsigned> slot_begin = {0};
    for (const MetaTensors* m : metas) {
      histories.push_back(pointer(m->amax_history));
      scales.push_back(pointer(m->scale));
      slot_begin.push_back(slot_begin.back() + static_cast<unsigned>(m->slots));
      id.push_back(histories.back());
      id.push_back(scales.back());
      id.push_back(reinterpret_cast<const void*>(static_cast<std::uintptr_t>(m->slots)));
    }
    auto found = keys_.find(id);
    if (found != keys_.end()) return *found->second;
    auto arrays = std::make_unique<KeyArrays>(session_, metas.size(), slot_begin.back());
    device().upload(arrays->histories.get(), histories.data(), histories.size() * sizeof(float*), stream());
    device().upload(arrays->scales.get(), scales.data(), scales.size() * sizeof(float*), stream());
    device().upload(arrays->slot_begin.get(), slot_begin.data(), slot_begin.size() * sizeof(unsigned), stream());
    return *keys_.emplace(std::move(id), std::move(arrays)).first->second;
  }

  std::shared_ptr<Session> session_;
  std::string name_;
  std::map<std::vector<const void*>, std::unique_ptr<KeyArrays>> keys_;
};

}  // namespace

std::unique_ptr<Backend> make_device_backend(std::unique_ptr<kernels::cuda::Device> device, std::string name,
                                             void* stream) {
  if (!device) throw std::invalid_argument("make_device_backend: no device");
  return std::make_unique<DeviceBackend>(std::move(device), std::move(name), stream);
}

std::unique_ptr<Backend> make_emulated_cuda_backend() {
  return make_device_backend(std::make_unique<kernels::cuda::EmulatedDevice>(), "cuda-emulated");
}

}  // namespace fp8sm::runtime
