#include "kernels/cuda/cuda_device.hpp"

#include <cuda_runtime_api.h>

#include <stdexcept>

namespace fp8sm::kernels::cuda {

void check_cuda(int status, const char* what) {
  if (status != cudaSuccess) {
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(static_cast<cudaError_t>(status)));
  }
}

const DeviceStatus& device_status() {
  static const DeviceStatus status = [] {
    DeviceStatus s;
    int count = 0;
    const cudaError_t error = cudaGetDeviceCount(&count);
    if (error != cudaSuccess) {
      s.why = std::string("no usable CUDA device: ") + cudaGetErrorString(error);
      return s;
    }
    if (count == 0) {
      s.why = "no CUDA device";
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
