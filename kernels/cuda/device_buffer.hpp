// Memory of `count` values of T on a Device (a GPU or the host emulation), zeroed when
// allocated, filled from and read back into host memory, released on destruction: what the
// device backend, the kernel tests and the benchmark hand to the kernels.
#pragma once

#include <cstddef>
#include <vector>

#include "kernels/cuda/device.hpp"

namespace fp8sm::kernels::cuda {

template <class T>
class DeviceBuffer {
 public:
  // In `stream`'s order (Device::allocate); copies in and out go on the same stream.
  DeviceBuffer(Device& device, std::size_t count, void* stream = nullptr)
      : device_(device), data_(device.allocate(count * sizeof(T), stream)), count_(count), stream_(stream) {}
  DeviceBuffer(Device& device, const std::vector<T>& host, void* stream = nullptr)
      : DeviceBuffer(device, host.size(), stream) {
    upload(host);
  }
  ~DeviceBuffer() { device_.release(data_, stream_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void upload(const T* host, std::size_t count) { device_.upload(data_, host, count * sizeof(T), stream_); }
  void upload(const std::vector<T>& host) { upload(host.data(), host.size()); }
  void download(T* host, std::size_t count) const { device_.download(host, data_, count * sizeof(T), stream_); }
  std::vector<T> download() const {
    std::vector<T> host(count_);
    download(host.data(), count_);
    return host;
  }
  T* get() const { return static_cast<T*>(data_); }
  std::size_t size() const { return count_; }

 private:
  Device& device_;
  void* data_;
  std::size_t count_;
  void* stream_;
};

}  // namespace fp8sm::kernels::cuda
