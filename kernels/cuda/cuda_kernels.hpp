// The runtime-compiled kernels (kernels/cuda/*.cu) loaded on the GPU of this process, and their
// launches. NVRTC compiles them for the device's architecture (or the caches have them);
// cudaLibraryLoadData loads the CUBINs through the runtime API, so nothing links the driver
// library. Pointers are device pointers; launches are asynchronous on `stream` (nullptr: the
// default stream). Every operation is the CPU reference's of the same name, bit for bit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "kernels/cuda/nvrtc_compiler.hpp"
#include "kernels/fp8.hpp"
#include "kernels/scale_update.hpp"

namespace fp8sm::kernels::cuda {

class CudaKernels {
 public:
  // Throws std::runtime_error when no GPU is usable (saying why) or a program does not load.
  explicit CudaKernels(NvrtcCompiler& compiler);
  ~CudaKernels();
  CudaKernels(const CudaKernels&) = delete;
  CudaKernels& operator=(const CudaKernels&) = delete;

  // `in` holds float32, or bf16 bit patterns when `bf16`. `amax` points to one float.
  void cast(const void* in, bool bf16, std::size_t count, float scale, Format format, std::uint8_t* out, float* amax,
            void* stream = nullptr) const;
  void cast_transpose(const void* in, bool bf16, std::size_t rows, std::size_t cols, float scale, Format format,
                      std::uint8_t* out, std::uint8_t* out_t, float* amax, void* stream = nullptr) const;
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

  int arch() const { return arch_; }

 private:
  const void* kernel(const std::string& name) const;

  int arch_ = 0;
  std::vector<void*> libraries_;               // cudaLibrary_t
  std::map<std::string, const void*> kernels_;  // cudaKernel_t by entry point
};

}  // namespace fp8sm::kernels::cuda
