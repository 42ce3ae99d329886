// Device memory of `count` values of T, zeroed when allocated, filled from and read back into
// host memory, freed on destruction: what the CUDA backend, the GPU tests and the benchmark
// hand to the kernels.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <vector>

#include "kernels/cuda/cuda_device.hpp"

namespace fp8sm::kernels::cuda {

template <class T>
class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t count) : count_(count) {
    const std::size_t bytes = std::max<std::size_t>(count, 1) * sizeof(T);
    check_cuda(cudaMalloc(&data_, bytes), "cudaMalloc");
    check_cuda(cudaMemset(data_, 0, bytes), "cudaMemset");
  }
  explicit DeviceBuffer(const std::vector<T>& host) : DeviceBuffer(host.size()) { upload(host); }
  ~DeviceBuffer() { cudaFree(data_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void upload(const T* host, std::size_t count) {
    check_cuda(cudaMemcpy(data_, host, count * sizeof(T), cudaMemcpyHostToDevice), "cudaMemcpy to the device");
  }
  void upload(const std::vector<T>& host) { upload(host.data(), host.size()); }
  void download(T* host, std::size_t count) const {
    check_cuda(cudaMemcpy(host, data_, count * sizeof(T), cudaMemcpyDeviceToHost), "cudaMemcpy from the device");
  }
  std::vector<T> download() const {
    std::vector<T> host(count_);
    download(host.data(), count_);
    return host;
  }
  T* get() const { return static_cast<T*>(data_); }
  std::size_t size() const { return count_; }

 private:
  void* data_ = nullptr;
  std::size_t count_;
};

}  // namespace fp8sm::kernels::cuda
