// The device backend's memory (device_backend_impl.hpp): the session every tensor lives on, the
// memory of what it makes, and the program's values going up to it (to_backend, indices); the
// operations find their operands' device memory here (pointer, fp8, ints).
#include <fmt/core.h>

#include <stdexcept>
#include <utility>
#include <vector>

#include "runtime/device_backend_impl.hpp"
#include "runtime/errors.hpp"

namespace fp8sm::runtime::device_detail {

Session::Session(std::unique_ptr<kernels::cuda::Device> d, void* user_stream)
    : device(std::move(d)), stream(user_stream != nullptr ? user_stream : device->create_stream()),
      owns_stream(user_stream == nullptr) {
  device->require_stream(stream);
}

Session::~Session() {
  if (owns_stream) device->destroy_stream(stream);
}

std::unique_ptr<DeviceValues> DeviceFloats::clone() const {
  auto copy = std::make_unique<DeviceFloats>(memory_.session(), memory_.count());
  copy->copy_from(*this);
  return copy;
}

void DeviceFloats::copy_from(const DeviceValues& other) {
  const auto& from = static_cast<const DeviceFloats&>(other);
  Session& s = *memory_.session();
  s.device->copy(memory_.get(), from.get(), memory_.count() * sizeof(float), s.stream);
}

void DeviceFloats::download(float* host) const {
  Session& s = *memory_.session();
  s.device->download(host, memory_.get(), memory_.count() * sizeof(float), s.stream);
}

Matrix DeviceBackend::to_backend(Matrix m) {
  if (m.on_device()) {
    const auto* values = dynamic_cast<const DeviceFloats*>(m.device.get());
    if (values == nullptr || values->session() != session_) {
      throw MisuseError(fmt::format("{}: a {} x {} matrix in the memory of another backend: bring it to the host "
                                    "with to_host() first",
                                    name_, m.rows, m.cols));
    }
    return m;
  }
  require_finite(m, fmt::format("{}: a matrix going to the device", name_));
  Matrix out = empty(m.rows, m.cols);
  device().upload(pointer(out), m.values.data(), m.values.size() * sizeof(float), stream());
  return out;
}

Matrix DeviceBackend::zeros(std::size_t rows, std::size_t cols) { return empty(rows, cols); }

Indices DeviceBackend::indices(std::vector<int> values) {
  auto on_device = std::make_shared<DeviceInts>(session_, values.size());
  if (!values.empty()) {
    device().upload(on_device->memory.get(), values.data(), values.size() * sizeof(int), stream());
  }
  return {std::move(values), std::move(on_device)};
}

Matrix DeviceBackend::empty(std::size_t rows, std::size_t cols) {
  Matrix m;
  m.rows = rows;
  m.cols = cols;
  m.device = std::make_unique<DeviceFloats>(session_, rows * cols);
  return m;
}

float* DeviceBackend::pointer(const Matrix& m) const {
  const auto* values = dynamic_cast<const DeviceFloats*>(m.device.get());
  if (values == nullptr) {
    throw std::logic_error(fmt::format("{}: a {}x{} matrix in host memory reached a device operation", name_, m.rows,
                                       m.cols));
  }
  return values->get();
}

const DeviceFp8& DeviceBackend::fp8(const Fp8Matrix& m) const {
  const auto* values = dynamic_cast<const DeviceFp8*>(m.device.get());
  if (values == nullptr) throw std::logic_error(fmt::format("{}: an FP8 tensor not made on the device", name_));
  return *values;
}

const int* DeviceBackend::ints(const Indices& indices) const {
  const auto* values = dynamic_cast<const DeviceInts*>(indices.device.get());
  if (values == nullptr) throw std::logic_error(fmt::format("{}: indices not on the device", name_));
  return values->memory.get();
}

}  // namespace fp8sm::runtime::device_detail
