#include "runtime/cuda_backend.hpp"

#include "kernels/cuda/cuda_device.hpp"
#include "kernels/cuda/gpu_device.hpp"
#include "runtime/device_backend.hpp"

namespace fp8sm::runtime {

std::unique_ptr<Backend> make_cuda_backend(CudaGemm gemm) {
  // One compiler for the process: its in-memory cache then serves every backend made after the
  // first (a compiler per backend went back to the disk cache, or to NVRTC, every time).
  static kernels::cuda::NvrtcCompiler compiler;
  const bool fast = gemm == CudaGemm::Fast;
  return make_device_backend(std::make_unique<kernels::cuda::GpuDevice>(compiler, fast), fast ? "cuda" : "cuda-exact");
}

std::string cuda_unavailable_reason() {
  const auto& status = kernels::cuda::device_status();
  return status.usable ? "" : status.why;
}

}  // namespace fp8sm::runtime
