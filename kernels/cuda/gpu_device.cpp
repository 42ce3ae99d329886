#include "kernels/cuda/gpu_device.hpp"

#include <cuda_runtime_api.h>

#include <fmt/core.h>

#include <stdexcept>

#include "kernels/cuda/cuda_device.hpp"

namespace fp8sm::kernels::cuda {

GpuDevice::GpuDevice(NvrtcCompiler& compiler, bool fast_gemm) {
  const DeviceStatus& device = device_status();
  if (!device.usable) throw std::runtime_error(fmt::format("GpuDevice: {}", device.why));
  arch_ = device.arch;
  name_ = fmt::format("{} (sm_{})", device.name, arch_);
  for (const auto& [program, names] : entry_points()) {
    const CompiledProgram compiled = compiler.compile(program, arch_);
    cudaLibrary_t library = nullptr;
    check_cuda(cudaLibraryLoadData(&library, compiled.cubin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0),
               fmt::format("cudaLibraryLoadData({})", program).c_str());
    libraries_.push_back(library);
    for (const std::string& name : names) {
      cudaKernel_t kernel = nullptr;
      check_cuda(cudaLibraryGetKernel(&kernel, library, name.c_str()), fmt::format("cudaLibraryGetKernel({})", name).c_str());
      kernels_[name] = reinterpret_cast<const void*>(kernel);
    }
  }
  if (fast_gemm) lt_ = std::make_unique<CublasLtGemm>();
}

GpuDevice::~GpuDevice() {
  lt_.reset();
  for (void* library : libraries_) cudaLibraryUnload(static_cast<cudaLibrary_t>(library));
}

std::string GpuDevice::name() const { return name_; }

void* GpuDevice::create_stream() {
  cudaStream_t stream = nullptr;
  check_cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  return stream;
}

void GpuDevice::destroy_stream(void* stream) noexcept { cudaStreamDestroy(static_cast<cudaStream_t>(stream)); }

void* GpuDevice::do_allocate(std::size_t bytes, void* stream) {
  void* memory = nullptr;
  const std::size_t size = bytes == 0 ? 1 : bytes;
  const auto s = static_cast<cudaStream_t>(stream);
  check_cuda(cudaMallocAsync(&memory, size, s), "cudaMallocAsync");
  const cudaError_t zeroed = cudaMemsetAsync(memory, 0, size, s);
  if (zeroed != cudaSuccess) cudaFreeAsync(memory, s);
  check_cuda(zeroed, "cudaMemsetAsync");
  return memory;
}

void GpuDevice::do_release(void* memory, void* stream) noexcept { cudaFreeAsync(memory, static_cast<cudaStream_t>(stream)); }

void GpuDevice::do_upload(void* device, const void* host, std::size_t bytes, void* stream) {
  check_cuda(cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, static_cast<cudaStream_t>(stream)),
             "cudaMemcpyAsync to the device");
}

void GpuDevice::do_download(void* host, const void* device, std::size_t bytes, void* stream) {
  const auto s = static_cast<cudaStream_t>(stream);
  check_cuda(cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, s), "cudaMemcpyAsync from the device");
  check_cuda(cudaStreamSynchronize(s), "cudaStreamSynchronize");
}

void GpuDevice::do_copy(void* to, const void* from, std::size_t bytes, void* stream) {
  check_cuda(cudaMemcpyAsync(to, from, bytes, cudaMemcpyDeviceToDevice, static_cast<cudaStream_t>(stream)),
             "cudaMemcpyAsync on the device");
}

void GpuDevice::do_zero(void* device, std::size_t bytes, void* stream) {
  check_cuda(cudaMemsetAsync(device, 0, bytes, static_cast<cudaStream_t>(stream)), "cudaMemsetAsync");
}

void GpuDevice::do_synchronize(void* stream) {
  check_cuda(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)), "cudaStreamSynchronize");
}

bool GpuDevice::takes_fast_gemm(std::size_t m, std::size_t n, std::size_t k, Format a_format,
                                Format b_format) const {
  return lt_ != nullptr && CublasLtGemm::supports(m, n, k, a_format, b_format);
}

void GpuDevice::gemm_tn_fast(const std::uint8_t* a, Format a_format, const float* a_scale_inv, const std::uint8_t* b,
                             Format b_format, const float* b_scale_inv, std::size_t m, std::size_t n, std::size_t k,
                             float* c, void* stream) {
  if (!lt_) throw std::logic_error(fmt::format("{}: made without the fast GEMM", name()));
  check_stream(stream, "gemm_tn_fast");
  lt_->gemm_tn(a, a_format, a_scale_inv, b, b_format, b_scale_inv, m, n, k, c, stream);  // throws where it does not apply
}

void GpuDevice::launch(const std::string& entry, const LaunchShape& shape, void** args, void* stream) const {
  const auto it = kernels_.find(entry);
  if (it == kernels_.end()) throw std::logic_error(fmt::format("GpuDevice: no kernel {}", entry));
  const dim3 grid(shape.grid[0], shape.grid[1], shape.grid[2]);
  const dim3 block(shape.block[0], shape.block[1], shape.block[2]);
  check_cuda(cudaLaunchKernel(it->second, grid, block, args, 0, static_cast<cudaStream_t>(stream)), entry.c_str());
}

}  // namespace fp8sm::kernels::cuda
