#include "kernels/cuda/host_emulation/emulated_device.hpp"

#include <fmt/core.h>

#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>

#include "kernels/cuda/host_emulation/emulated_grid.hpp"
#include "kernels/cuda/host_emulation/emulated_programs.hpp"

namespace fp8sm::kernels::cuda {

namespace {

// Guard bytes on each side of an allocation; the front keeps the user pointer 64-byte aligned.
constexpr std::size_t kGuardBytes = 64;
constexpr unsigned char kGuardPattern = 0xA5;

unsigned char* base_of(const void* memory) { return static_cast<unsigned char*>(const_cast<void*>(memory)) - kGuardBytes; }

bool intact(const unsigned char* guard) {
  for (std::size_t i = 0; i < kGuardBytes; ++i) {
    if (guard[i] != kGuardPattern) return false;
  }
  return true;
}

}  // namespace

EmulatedDevice::~EmulatedDevice() {
  for (const auto& [memory, bytes] : live_) std::free(base_of(memory));
  for (void* stream : streams_) delete static_cast<char*>(stream);
}

void* EmulatedDevice::create_stream() {
  void* stream = new char;
  streams_.insert(stream);
  return stream;
}

void EmulatedDevice::destroy_stream(void* stream) noexcept {
  if (streams_.erase(stream) != 0) delete static_cast<char*>(stream);
}

void* EmulatedDevice::do_allocate(std::size_t bytes, void* /*stream*/) {
  const std::size_t size = bytes == 0 ? 1 : bytes;
  auto* base = static_cast<unsigned char*>(std::aligned_alloc(kGuardBytes, (size + 2 * kGuardBytes + kGuardBytes - 1) /
                                                                               kGuardBytes * kGuardBytes));
  if (base == nullptr) throw std::bad_alloc();
  std::memset(base, kGuardPattern, kGuardBytes);
  std::memset(base + kGuardBytes, 0, size);
  std::memset(base + kGuardBytes + size, kGuardPattern, kGuardBytes);
  void* memory = base + kGuardBytes;
  live_[memory] = size;
  return memory;
}

void EmulatedDevice::do_release(void* memory, void* /*stream*/) noexcept {
  const auto it = live_.find(memory);
  if (it == live_.end()) return;
  live_.erase(it);
  std::free(base_of(memory));
}

void EmulatedDevice::do_upload(void* device, const void* host, std::size_t bytes, void* /*stream*/) {
  std::memcpy(device, host, bytes);
}

void EmulatedDevice::do_download(void* host, const void* device, std::size_t bytes, void* /*stream*/) {
  std::memcpy(host, device, bytes);
}

void EmulatedDevice::do_copy(void* to, const void* from, std::size_t bytes, void* /*stream*/) {
  std::memmove(to, from, bytes);
}

void EmulatedDevice::do_zero(void* device, std::size_t bytes, void* /*stream*/) { std::memset(device, 0, bytes); }

void EmulatedDevice::launch(const std::string& entry, const LaunchShape& shape, void** args, void* /*stream*/) const {
  const auto& kernels = emulation::host_kernels();
  const auto it = kernels.find(entry);
  if (it == kernels.end()) throw std::logic_error(fmt::format("EmulatedDevice: no kernel {}", entry));
  const emulation::HostKernel& kernel = it->second;
  ++launches_[entry];
  emulation::run_grid({shape.grid[0], shape.grid[1], shape.grid[2]}, {shape.block[0], shape.block[1], shape.block[2]},
                      [&] { kernel(args); });
  check_guards(entry);
}

std::size_t EmulatedDevice::launches(const std::string& entry) const {
  const auto it = launches_.find(entry);
  return it == launches_.end() ? 0 : it->second;
}

void EmulatedDevice::check_guards(const std::string& after) const {
  for (const auto& [memory, bytes] : live_) {
    unsigned char* base = base_of(memory);
    if (!intact(base) || !intact(base + kGuardBytes + bytes)) {
      // Reported once: the guards are whole again for the next launch.
      std::memset(base, kGuardPattern, kGuardBytes);
      std::memset(base + kGuardBytes + bytes, kGuardPattern, kGuardBytes);
      throw emulation::KernelFault(
          fmt::format("CUDA host emulation: {} wrote outside a buffer of {} bytes", after, bytes));
    }
  }
}

}  // namespace fp8sm::kernels::cuda
