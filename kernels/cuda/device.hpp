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

  // Memory: `allocate` returns zeroed memory of at least one byte.
  virtual void* allocate(std::size_t bytes) = 0;
  virtual void release(void* memory) noexcept = 0;
  virtual void upload(void* device, const void* host, std::size_t bytes) = 0;
  virtual void download(void* host, const void* device, std::size_t bytes) = 0;

  // `in` holds float32, or bf16 bit patterns when `bf16`. `amax` points to one float. Both
  // casts take their vectorized kernel (4 values a thread) where the count or shape and the
  // pointers' alignment allow it (takes_vectorized_*), else the kernel for any shape.
  void cast(const void* in, bool bf16, std::size_t count, float scale, Format format, std::uint8_t* out, float* amax,
            void* stream = nullptr) const;
  void cast_transpose(const void* in, bool bf16, std::size_t rows, std::size_t cols, float scale, Format format,
                      std::uint8_t* out, std::uint8_t* out_t, float* amax, void* stream = nullptr) const;
  bool takes_vectorized_cast(const void* in, bool bf16, std::size_t count, const std::uint8_t* out) const;
  bool takes_vectorized_cast_transpose(const void* in, bool bf16, std::size_t rows, std::size_t cols,
                                       const std::uint8_t* out, const std::uint8_t* out_t) const;
  // Off: every cast takes the kernel for any shape (the tests and the benchmark compare the two).
  void set_vectorized(bool on) { vectorized_ = on; }
  void dequantize(const std::uint8_t* in, std::size_t count, Format format, float scale_inv, float* out,
                  void* stream = nullptr) const;
  // c (m x n) = A (m x k codes) B (n x k codes)ᵀ dequantized, in kernels::gemm_tn's exact order.
  void gemm_tn_reference(const std::uint8_t* a, Format a_format, float a_scale_inv, const std::uint8_t* b,
                         Format b_format, float b_scale_inv, std::size_t m, std::size_t n, std::size_t k, float* c,
                         void* stream = nullptr) const;
  // The update of every tensor of one key in one launch: `histories` and `scales` are device
  // arrays of `tensors` device pointers, `reduced` the key's amaxes, `slot_begin` tensors + 1
  // prefix sums of the slot counts (all on the device).
  void scale_update(float* const* histories, float* const* scales, const float* reduced, const unsigned* slot_begin,
                    unsigned tensors, unsigned total_slots, unsigned history_length, const ScaleUpdateRecipe& recipe,
                    void* stream = nullptr) const;
  // kernels::update_scales on this device: the metas (host memory) copied in, the update of all
  // of them in one launch (scale_update), the histories and scales copied back. The metas must
  // share one history length, and `reduced` hold one amax per slot of all of them in order.
  void update_scales(const std::vector<ScalingMeta*>& metas, const std::vector<float>& reduced,
                     const ScaleUpdateRecipe& recipe);

  // A faster GEMM than the reference, where this device has one and it takes the problem
  // (takes_fast_gemm): results within its documented tolerance, not bit for bit. scale_inv
  // pointers are device pointers to one float each. Without one, gemm_tn_fast throws.
  virtual bool takes_fast_gemm(std::size_t /*m*/, std::size_t /*n*/, std::size_t /*k*/, Format /*a_format*/,
                               Format /*b_format*/) const {
    return false;
  }
  virtual void gemm_tn_fast(const std::uint8_t* /*a*/, Format /*a_format*/, const float* /*a_scale_inv*/,
                            const std::uint8_t* /*b*/, Format /*b_format*/, const float* /*b_scale_inv*/,
                            std::size_t /*m*/, std::size_t /*n*/, std::size_t /*k*/, float* /*c*/) {
    throw std::logic_error(fmt::format("{}: no fast GEMM", name()));
  }

  // Every entry point of every kernel source, by file (what a device must load).
  static const std::vector<std::pair<std::string, std::vector<std::string>>>& entry_points();

 protected:
  // Runs `entry` with `args` (pointers to the arguments, in the kernel's parameter order).
  virtual void launch(const std::string& entry, const LaunchShape& shape, void** args, void* stream) const = 0;

 private:
  bool vectorized_ = true;
};

}  // namespace fp8sm::kernels::cuda
