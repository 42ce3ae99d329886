// The same operations as the CPU backend, computed by the kernels of kernels/cuda/ on a Device,
// on tensors that stay in device memory: a matrix this backend makes holds device memory
// (DeviceFloats), an FP8 tensor its codes, their transpose and its scale_inv there, a module's
// meta its history and scales there. Every operation is issued on the backend's one stream, and
// nothing in a step copies to or from the host or waits for the device, except what the
// program asks for: its inputs and gradient seeds going in (to_backend), what it reads back
// (Matrix::to_host), and a key's amaxes when its group reduces on the host (MPI).
//
// This file: the backend's construction (its session: the device and the stream) and what it
// answers about itself. Its other jobs have a file each (device_backend_impl.hpp lists them).
#include "runtime/device_backend.hpp"

#include <stdexcept>
#include <utility>

#include "kernels/cuda/host_emulation/emulated_device.hpp"
#include "runtime/device_backend_impl.hpp"

namespace fp8sm::runtime {

namespace device_detail {

DeviceBackend::DeviceBackend(std::unique_ptr<kernels::cuda::Device> device, std::string name, void* stream)
    : session_(std::make_shared<Session>(std::move(device), stream)), name_(std::move(name)) {}

std::string DeviceBackend::name() const { return name_; }

Traffic DeviceBackend::traffic() const {
  const kernels::cuda::Device::Traffic& t = device().traffic();
  return {t.uploads, t.downloads, t.upload_bytes, t.download_bytes, t.device_copies, t.synchronizations};
}

void DeviceBackend::synchronize() { device().synchronize(stream()); }

}  // namespace device_detail

std::unique_ptr<Backend> make_device_backend(std::unique_ptr<kernels::cuda::Device> device, std::string name,
                                             void* stream) {
  if (!device) throw std::invalid_argument("make_device_backend: no device");
  return std::make_unique<device_detail::DeviceBackend>(std::move(device), std::move(name), stream);
}

std::unique_ptr<Backend> make_emulated_cuda_backend() {
  return make_device_backend(std::make_unique<kernels::cuda::EmulatedDevice>(), "cuda-emulated");
}

}  // namespace fp8sm::runtime
