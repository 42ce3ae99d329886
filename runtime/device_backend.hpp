// The runtime's backend on a kernels::cuda::Device: the CUDA kernels on a GPU ("cuda",
// "cuda-exact": cuda_backend.hpp) or under the host emulation ("cuda-emulated"), with one
// implementation, so that what the emulation tests is what runs on the GPU. Its tensors, FP8
// tensors, metas and weights live in device memory, and a step copies nothing between the host
// and the device but what the program feeds in and reads back (device_backend.cpp; its other
// files, one job each: device_backend_impl.hpp).
#pragma once

#include <memory>
#include <string>

#include "kernels/cuda/device.hpp"
#include "runtime/backend.hpp"

namespace fp8sm::runtime {

// `name` is what Backend::name() answers. Every kernel launch, cuBLASLt call and copy of the
// backend goes on `stream` (a cudaStream_t on a GPU, which the caller keeps alive longer than
// every matrix the backend makes); nullptr: a stream the backend creates. The device is told
// to refuse work on any other stream (Device::require_stream).
std::unique_ptr<Backend> make_device_backend(std::unique_ptr<kernels::cuda::Device> device, std::string name,
                                             void* stream = nullptr);

// The CUDA kernels under the host emulation: every result bit for bit the CPU backend's, on any
// machine; slow (one fiber per CUDA thread), for tests.
std::unique_ptr<Backend> make_emulated_cuda_backend();

}  // namespace fp8sm::runtime
