// Device memory for the GPU tests and benchmarks: allocated, filled from and read back into
// host vectors; freed on destruction.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <vector>

#include "kernels/cuda/cuda_device.hpp"

namespace fp8sm::test_support {

template <class T>
class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t count) : count_(count) {
    kernels::cuda::check_cuda(cudaMalloc(&data_, std::max<std::size_t>(count, 1) * sizeof(T)), "cudaMalloc");
  }
  explicit DeviceBuffer(const std::vector<T>& host) : DeviceBuffer(host.size()) { upload(host); }
  ~DeviceBuffer() { cudaFree(data_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void upload(const std::vector<T>& host) {
    kernels::cuda::check_cuda(cudaMemcpy(data_, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice),
                              "cudaMemcpy to the device");
  }
  std::vector<T> download() const {
    std::vector<T> host(count_);
    kernels::cuda::check_cuda(cudaMemcpy(host.data(), data_, count_ * sizeof(T), cudaMemcpyDeviceToHost),
                              "cudaMemcpy from the device");
    return host;
  }
  T* get() const { return static_cast<T*>(data_); }

 private:
  void* data_ = nullptr;
  std::size_t count_;
};

}  // namespace fp8sm::test_support
