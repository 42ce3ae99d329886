#include "kernels/cuda/cuda_device.hpp"

#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <fmt/core.h>

#include <stdexcept>

namespace fp8sm::kernels::cuda {

void check_cuda(int status, const char* what) {
  if (status != cudaSuccess) {
    throw std::runtime_error(fmt::format("{}: {}", what, cudaGetErrorString(static_cast<cudaError_t>(status))));
  }
}

namespace {

// The driver library is loaded at run time by the CUDA runtime (binaries never link it), so
// its absence is how a machine without an NVIDIA GPU shows itself.
bool driver_library_present() {
  void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (driver == nullptr) return false;
  dlclose(driver);
  return true;
}

// Says plainly when the reason is that there is no GPU, with the CUDA runtime's own words.
std::string why_no_device(cudaError_t error) {
  const std::string runtime_says = error == cudaSuccess ? "no device" : cudaGetErrorString(error);
  if (error == cudaSuccess || error == cudaErrorNoDevice) {
    return fmt::format("no usable CUDA device: this machine has no NVIDIA GPU (CUDA runtime: {})", runtime_says);
  }
  if (error == cudaErrorInsufficientDriver && !driver_library_present()) {
    return fmt::format("no usable CUDA device: no NVIDIA driver is installed (libcuda.so.1 cannot be loaded), so there "
                       "is no GPU to use here (CUDA runtime: {})",
                       runtime_says);
  }
  return fmt::format("no usable CUDA device: {}", runtime_says);
}

}  // namespace

const DeviceStatus& device_status() {
  static const DeviceStatus status = [] {
    DeviceStatus s;
    int count = 0;
    const cudaError_t error = cudaGetDeviceCount(&count);
    if (error != cudaSuccess || count == 0) {
      s.why = why_no_device(error);
      return s;
    }
    cudaDeviceProp properties{};
    if (cudaGetDeviceProperties(&properties, 0) != cudaSuccess) {
      s.why = "cudaGetDeviceProperties failed";
      return s;
    }
    s.usable = true;
    s.device = 0;
    s.arch = properties.major * 10 + properties.minor;
    s.name = properties.name;
    return s;
  }();
  return status;
}

}  // namespace fp8sm::kernels::cuda
