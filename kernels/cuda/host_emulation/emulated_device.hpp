// The CUDA kernels on the CPU: a Device whose memory is host memory and whose launches run the
// kernel sources under the host emulation (emulated_grid.hpp), synchronously. It runs the same
// launches, with the same shapes and argument lists, as a GpuDevice, so the kernels and the
// code that drives them are tested where there is no GPU. Slow (one fiber per CUDA thread):
// for tests and for seeing what a kernel does, not for training.
//
// Every allocation has guard bytes on both sides; after each launch they are checked, and a
// kernel that wrote outside its buffers ends the launch with an emulation::KernelFault.
#pragma once

#include <cstddef>
#include <map>
#include <set>
#include <string>

#include "kernels/cuda/device.hpp"

namespace fp8sm::kernels::cuda {

class EmulatedDevice final : public Device {
 public:
  EmulatedDevice() = default;
  ~EmulatedDevice() override;
  EmulatedDevice(const EmulatedDevice&) = delete;
  EmulatedDevice& operator=(const EmulatedDevice&) = delete;

  std::string name() const override { return "CUDA host emulation"; }
  // Streams are tokens here (everything runs at once, in issue order); each is a distinct
  // address, so that the stream checks (Device::require_stream) see which one work names.
  void* create_stream() override;
  void destroy_stream(void* stream) noexcept override;

  // How many times `entry` was launched (tests: which kernel an operation chose).
  std::size_t launches(const std::string& entry) const;

 protected:
  void launch(const std::string& entry, const LaunchShape& shape, void** args, void* stream) const override;
  void* do_allocate(std::size_t bytes, void* stream) override;
  void do_release(void* memory, void* stream) noexcept override;
  void do_upload(void* device, const void* host, std::size_t bytes, void* stream) override;
  void do_download(void* host, const void* device, std::size_t bytes, void* stream) override;
  void do_copy(void* to, const void* from, std::size_t bytes, void* stream) override;
  void do_zero(void* device, std::size_t bytes, void* stream) override;
  void do_synchronize(void* /*stream*/) override {}

 private:
  void check_guards(const std::string& after) const;

  std::map<const void*, std::size_t> live_;  // user pointer -> bytes
  std::set<void*> streams_;
  mutable std::map<std::string, std::size_t> launches_;
};

}  // namespace fp8sm::kernels::cuda
