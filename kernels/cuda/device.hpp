// Where the CUDA kernels of kernels/cuda/*.cu run: a GPU (GpuDevice, gpu_device.hpp) or the host
// emulation (EmulatedDevice, host_emulation/emulated_device.hpp), behind one interface. The
// operations below choose the entry point, the launch shape and the argument list once, here,
// for both: a launch the emulation runs correctly is the launch the GPU gets.
//
// Pointers passed to the operations are this device's (allocate / DeviceBuffer). Every
// operation equals the CPU reference of the same name (kernels/*.hpp) bit for bit.
#pragma once

#include <fmt/core.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/fp8.hpp"
#include "kernels/scale_update.hpp"
#include "kernels/scaling_meta.hpp"

namespace fp8sm::kernels::cuda {

struct LaunchShape {
  unsigned grid[3] = {1, 1, 1};
  unsigned block[3] = {1, 1, 1};
};

class Device {
 public:
  virtual ~Device() = default;
  virtual std::string name() const = 0;

  // Streams: the order of a device's work. Every operation below takes one (nullptr: the
  // default stream) and is ordered after what was issued on it before; synchronize waits for
  // one stream only, never for the whole device.
  virtual void* create_stream() = 0;
  virtual void destroy_stream(void* stream) noexcept = 0;
  void synchronize(void* stream);
  // Once set, an operation issued on any other stream is a std::logic_error: a context's
  // backend sets its stream, so that nothing it computes runs elsewhere (on the host emulation,
  // which runs everything at once, this is how the tests see which stream each launch named).
  void require_stream(void* stream) { required_stream_ = stream; has_required_stream_ = true; }

  // Memory: `allocate` returns zeroed memory of at least one byte, in `stream`'s order (a GPU
  // allocates from the stream's pool: no device-wide synchronisation), `release` gives it back
  // after the work issued on `stream` before.
  void* allocate(std::size_t bytes, void* stream = nullptr);
  void release(void* memory, void* stream = nullptr) noexcept;
  // Copies between the host and the device. download returns once the bytes are on the host
  // (it waits for `stream`). Both are counted (traffic()): the copies a training step makes.
  void upload(void* device, const void* host, std::size_t bytes, void* stream = nullptr);
  void download(void* host, const void* device, std::size_t bytes, void* stream = nullptr);
  // Device to device, and zeroing; counted apart from the host's copies.
  void copy(void* to, const void* from, std::size_t bytes, void* stream = nullptr);
  void zero(void* device, std::size_t bytes, void* stream = nullptr);

  // What crossed between the host and the device, and how often the host waited.
  struct Traffic {
    std::size_t uploads = 0, downloads = 0;
    std::size_t upload_bytes = 0, download_bytes = 0;
    std::size_t device_copies = 0;
    std::size_t synchronizations = 0;  // download's waits and synchronize's
  };
  const Traffic& traffic() const { return traffic_; }
  void reset_traffic() { traffic_ = Traffic{}; }

  // `in` holds float32, or bf16 bit patterns when `bf16`. `scale` and `amax` point to one
  // float each, on the device; so does `scale_inv`, which (unless null) gets 1 / scale, the
  // factor that dequantizes the codes (kernels::scale_inverse). Both casts take their
  // vectorized kernel (4 values a thread) where the count or shape and the pointers' alignment
  // allow it (takes_vectorized_*), else the kernel for any shape.
  void cast(const void* in, bool bf16, std::size_t count, const float* scale, Format format, std::uint8_t* out,
            float* amax, float* scale_inv = nullptr, void* stream = nullptr) const;
  void cast_transpose(const void* in, bool bf16, std::size_t rows, std::size_t cols, const float* scale, Format format,
                      std::uint8_t* out, std::uint8_t* out_t, float* amax, float* scale_inv = nullptr,
                      void* stream = nullptr) const;
  bool takes_vectorized_cast(const void* in, bool bf16, std::size_t count, const std::uint8_t* out) const;
  bool takes_vectorized_cast_transpose(const void* in, bool bf16, std::size_t rows, std::size_t cols,
                                       const std::uint8_t* out, const std::uint8_t* out_t) const;
  // Off: every cast takes the kernel for any shape (the tests and the benchmark compare the two).
  void set_vectorized(bool on) { vectorized_ = on; }
  void dequantize(const std::uint8_t* in, std::size_t count, Format format, float scale_inv, float* out,
                  void* stream = nullptr) const;
  // c (m x n) = A (m x k codes) B (n x k codes)ᵀ dequantized, in kernels::gemm_tn's exact order;
  // the scale_invs are device pointers to one float each.
  void gemm_tn_reference(const std::uint8_t* a, Format a_format, const float* a_scale_inv, const std::uint8_t* b,
                         Format b_format, const float* b_scale_inv, std::size_t m, std::size_t n, std::size_t k,
                         float* c, void* stream = nullptr) const;

  // The runtime's fp32 operations (elementwise.cu), each equal to the runtime's CPU code bit for
  // bit: y = max(x, 0); dx = x > 0 ? dy : 0; out = a + b; w = w - rate * g; c (m x n) = A (m x
  // k) Bᵀ (B n x k) with k ascending; out (cols x rows) = inᵀ.
  void relu(const float* x, std::size_t count, float* y, void* stream = nullptr) const;
  void relu_backward(const float* x, const float* dy, std::size_t count, float* dx, void* stream = nullptr) const;
  void add(const float* a, const float* b, std::size_t count, float* out, void* stream = nullptr) const;
  void sgd(float* w, const float* g, float rate, std::size_t count, void* stream = nullptr) const;
  void matmul_nt(const float* a, const float* b, std::size_t m, std::size_t n, std::size_t k, float* c,
                 void* stream = nullptr) const;
  void transpose(const float* in, std::size_t rows, std::size_t cols, float* out, void* stream = nullptr) const;

  // The transformer's other layers (layers.cu), each kernels/layer_math.hpp's float version in
  // its order: bit for bit under the emulation; with CUDA's erff/expf/logf on a GPU.
  void gelu(const float* x, std::size_t count, float* y, void* stream = nullptr) const;
  void gelu_backward(const float* x, const float* dy, std::size_t count, float* dx, void* stream = nullptr) const;
  void layer_norm(const float* x, std::size_t rows, std::size_t cols, const float* gamma, const float* beta, float eps,
                  float* y, float* mean, float* rstd, void* stream = nullptr) const;
  // dx, and dgamma / dbeta added to.
  void layer_norm_backward(const float* x, const float* dy, std::size_t rows, std::size_t cols, const float* gamma,
                           const float* mean, const float* rstd, float* dx, float* dgamma, float* dbeta,
                           void* stream = nullptr) const;
  void causal_attention(const float* qkv, std::size_t sequences, std::size_t length, std::size_t width, float* out,
                        float* probabilities, void* stream = nullptr) const;
  // `scratch`: sequences x length floats.
  void causal_attention_backward(const float* qkv, const float* probabilities, const float* dout,
                                 std::size_t sequences, std::size_t length, std::size_t width, float* dqkv,
                                 float* scratch, void* stream = nullptr) const;
  // The probabilities, and the mean loss of the `counted` rows whose target is not negative into
  // `loss` (one float); `terms`: rows floats of scratch.
  void cross_entropy(const float* logits, std::size_t rows, std::size_t cols, const int* targets, std::size_t counted,
                     float* probabilities, float* terms, float* loss, void* stream = nullptr) const;
  void cross_entropy_backward(const float* probabilities, std::size_t rows, std::size_t cols, const int* targets,
                              std::size_t counted, const float* dloss, float* dlogits, void* stream = nullptr) const;
  void embedding(const float* table, const int* tokens, std::size_t rows, std::size_t width, float* out,
                 void* stream = nullptr) const;
  void embedding_backward(const float* dy, const int* tokens, std::size_t rows, std::size_t width, float* table_grad,
                          void* stream = nullptr) const;
  struct AdamConstants {
    float beta1, one_minus_beta1, beta2, one_minus_beta2, rate, correction1, correction2, epsilon;
  };
  void adam(float* w, const float* g, float* m, float* v, std::size_t count, const AdamConstants& constants,
            void* stream = nullptr) const;
  // The update of every tensor of one key in one launch: `histories` and `scales` are device
  // arrays of `tensors` device pointers, `reduced` the key's amaxes, `slot_begin` tensors + 1
  // prefix sums of the slot counts (all on the device).
  void scale_update(float* const* histories, float* const* scales, const float* reduced, const unsigned* slot_begin,
                    unsigned tensors, unsigned total_slots, unsigned history_length, const ScaleUpdateRecipe& recipe,
                    void* stream = nullptr) const;
  // kernels::update_scales on this device for metas in host memory: copied in, the update of
  // all of them in one launch (scale_update), the histories and scales copied back. The metas
  // must share one history length, and `reduced` hold one amax per slot of all of them in order.
  void update_scales(const std::vector<ScalingMeta*>& metas, const std::vector<float>& reduced,
                     const ScaleUpdateRecipe& recipe);
  // Gathers the current amaxes (row 0) of `tensors` histories into `amaxes`, in order: tensor
  // t's `slot_begin[t+1] - slot_begin[t]` slots at amaxes[slot_begin[t]...] (device arrays, as
  // scale_update's). What a key's reduction reads, on the device.
  void gather_amaxes(float* const* histories, const unsigned* slot_begin, unsigned tensors, unsigned total_slots,
                     float* amaxes, void* stream = nullptr) const;
  // `count` amaxes turned, in place, into the int32 keys of runtime/amax_order.hpp (an
  // integer MAX of keys is the amax order's maximum), and keys back into amaxes.
  void amax_to_order_keys(float* amaxes, std::size_t count, void* stream = nullptr) const;
  void amax_from_order_keys(float* keys, std::size_t count, void* stream = nullptr) const;

  // A faster GEMM than the reference, where this device has one and it takes the problem
  // (takes_fast_gemm): results within its documented tolerance, not bit for bit. scale_inv
  // pointers are device pointers to one float each. Without one, gemm_tn_fast throws.
  virtual bool takes_fast_gemm(std::size_t /*m*/, std::size_t /*n*/, std::size_t /*k*/, Format /*a_format*/,
                               Format /*b_format*/) const {
    return false;
  }
  virtual void gemm_tn_fast(const std::uint8_t* /*a*/, Format /*a_format*/, const float* /*a_scale_inv*/,
                            const std::uint8_t* /*b*/, Format /*b_format*/, const float* /*b_scale_inv*/,
                            std::size_t /*m*/, std::size_t /*n*/, std::size_t /*k*/, float* /*c*/,
                            void* /*stream*/ = nullptr) {
    throw std::logic_error(fmt::format("{}: no fast GEMM", name()));
  }

  // Every entry point of every kernel source, by file (what a device must load).
  static const std::vector<std::pair<std::string, std::vector<std::string>>>& entry_points();

 protected:
  // Runs `entry` with `args` (pointers to the arguments, in the kernel's parameter order).
  virtual void launch(const std::string& entry, const LaunchShape& shape, void** args, void* stream) const = 0;
  // What the public memory operations do, uncounted and unchecked.
  virtual void* do_allocate(std::size_t bytes, void* stream) = 0;
  virtual void do_release(void* memory, void* stream) noexcept = 0;
  virtual void do_upload(void* device, const void* host, std::size_t bytes, void* stream) = 0;
  virtual void do_download(void* host, const void* device, std::size_t bytes, void* stream) = 0;
  virtual void do_copy(void* to, const void* from, std::size_t bytes, void* stream) = 0;
  virtual void do_zero(void* device, std::size_t bytes, void* stream) = 0;
  virtual void do_synchronize(void* stream) = 0;
  // std::logic_error unless `stream` is the required one (require_stream), if any.
  void check_stream(void* stream, const char* what) const;
  // launch, after check_stream.
  void launch_on(const std::string& entry, const LaunchShape& shape, void** args, void* stream) const;

 private:
  bool vectorized_ = true;
  void* required_stream_ = nullptr;
  bool has_required_stream_ = false;
  Traffic traffic_;
};

}  // namespace fp8sm::kernels::cuda
