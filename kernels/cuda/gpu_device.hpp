// The kernels of kernels/cuda/*.cu on the GPU of this process. NVRTC compiles them for the
// device's architecture (or the caches have them); cudaLibraryLoadData loads the CUBINs through
// the runtime API, so nothing links the driver library. Everything is asynchronous on the
// stream it names (nullptr: the default stream) but download, which waits for that stream.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kernels/cuda/cublaslt_gemm.hpp"
#include "kernels/cuda/device.hpp"
#include "kernels/cuda/nvrtc_compiler.hpp"

namespace fp8sm::kernels::cuda {

class GpuDevice final : public Device {
 public:
  // Throws std::runtime_error when no GPU is usable (saying why) or a program does not load.
  // `fast_gemm`: gemm_tn_fast is cuBLASLt (where it takes the problem).
  explicit GpuDevice(NvrtcCompiler& compiler, bool fast_gemm = false);
  ~GpuDevice() override;
  GpuDevice(const GpuDevice&) = delete;
  GpuDevice& operator=(const GpuDevice&) = delete;

  std::string name() const override;
  void* create_stream() override;
  void destroy_stream(void* stream) noexcept override;
  bool takes_fast_gemm(std::size_t m, std::size_t n, std::size_t k, Format a_format, Format b_format) const override;
  void gemm_tn_fast(const std::uint8_t* a, Format a_format, const float* a_scale_inv, const std::uint8_t* b,
                    Format b_format, const float* b_scale_inv, std::size_t m, std::size_t n, std::size_t k,
                    float* c, void* stream = nullptr) override;

  int arch() const { return arch_; }

 protected:
  void launch(const std::string& entry, const LaunchShape& shape, void** args, void* stream) const override;
  // Stream-ordered: cudaMallocAsync / cudaFreeAsync from the device's default pool (cudaFree
  // would synchronise the whole device), copies with cudaMemcpyAsync on the stream; a download
  // then waits for that stream alone.
  void* do_allocate(std::size_t bytes, void* stream) override;
  void do_release(void* memory, void* stream) noexcept override;
  void do_upload(void* device, const void* host, std::size_t bytes, void* stream) override;
  void do_download(void* host, const void* device, std::size_t bytes, void* stream) override;
  void do_copy(void* to, const void* from, std::size_t bytes, void* stream) override;
  void do_zero(void* device, std::size_t bytes, void* stream) override;
  void do_synchronize(void* stream) override;

 private:
  int arch_ = 0;
  std::string name_;
  std::vector<void*> libraries_;                // cudaLibrary_t
  std::map<std::string, const void*> kernels_;  // cudaKernel_t by entry point
  std::unique_ptr<CublasLtGemm> lt_;
};

}  // namespace fp8sm::kernels::cuda
