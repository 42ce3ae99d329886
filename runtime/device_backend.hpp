// The runtime's backend on a kernels::cuda::Device: the CUDA kernels on a GPU ("cuda",
// "cuda-exact": cuda_backend.hpp) or under the host emulation ("cuda-emulated"), with one
// implementation, so that what the emulation tests is what runs on the GPU.
#pragma once

#include <memory>
#include <string>

#include "kernels/cuda/device.hpp"
#include "runtime/backend.hpp"

namespace fp8sm::runtime {

// `name` is what Backend::name() answers.
std::unique_ptr<Backend> make_device_backend(std::unique_ptr<kernels::cuda::Device> device, std::string name);

// The CUDA kernels under the host emulation: every result bit for bit the CPU backend's, on any
// machine; slow (one fiber per CUDA thread), for tests.
std::unique_ptr<Backend> make_emulated_cuda_backend();

}  // namespace fp8sm::runtime
