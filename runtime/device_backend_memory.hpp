// The device memory of the device backend's tensors (device_backend.hpp): a matrix's floats, an
// FP8 tensor's codes, transpose and scale_inv, a tensor of indices, each allocated and released
// on the backend's one stream. Internal to the backend's files (device_backend*.cpp): not part
// of the API a training program includes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>

#include "kernels/cuda/device.hpp"
#include "runtime/backend.hpp"

namespace fp8sm::runtime::device_detail {

// The device and the stream every tensor of one backend lives on. Shared by the backend and
// by every matrix it made: a matrix may outlive its context (a training's results), and its
// memory must still be released on a live stream of a live device.
struct Session {
  Session(std::unique_ptr<kernels::cuda::Device> d, void* user_stream);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  std::unique_ptr<kernels::cuda::Device> device;
  void* stream;
  bool owns_stream;
};

// Device memory of `count` values of T on the session's stream.
template <class T>
class SessionMemory {
 public:
  SessionMemory(std::shared_ptr<Session> session, std::size_t count)
      : session_(std::move(session)),
        data_(static_cast<T*>(session_->device->allocate(count * sizeof(T), session_->stream))),
        count_(count) {}
  ~SessionMemory() { session_->device->release(data_, session_->stream); }
  SessionMemory(const SessionMemory&) = delete;
  SessionMemory& operator=(const SessionMemory&) = delete;
  T* get() const { return data_; }
  std::size_t count() const { return count_; }
  const std::shared_ptr<Session>& session() const { return session_; }

 private:
  std::shared_ptr<Session> session_;
  T* data_;
  std::size_t count_;
};

// A matrix's values (Matrix::device).
class DeviceFloats final : public DeviceValues {
 public:
  DeviceFloats(std::shared_ptr<Session> session, std::size_t count) : memory_(std::move(session), count) {}
  std::unique_ptr<DeviceValues> clone() const override;
  void copy_from(const DeviceValues& other) override;
  void download(float* host) const override;
  std::size_t count() const override { return memory_.count(); }
  float* get() const { return memory_.get(); }
  const std::shared_ptr<Session>& session() const { return memory_.session(); }

 private:
  SessionMemory<float> memory_;
};

// An FP8 tensor's codes, their transpose, and its 1 / scale (Fp8Matrix::device).
class DeviceFp8 final : public Fp8DeviceValues {
 public:
  DeviceFp8(const std::shared_ptr<Session>& session, std::size_t count)
      : codes(session, count), transposed(session, count), scale_inv(session, 1) {}
  SessionMemory<std::uint8_t> codes, transposed;
  SessionMemory<float> scale_inv;
};

// A tensor of indices (tokens, targets: Indices::device).
class DeviceInts final : public DeviceIndices {
 public:
  DeviceInts(const std::shared_ptr<Session>& session, std::size_t count) : memory(session, count) {}
  SessionMemory<int> memory;
};

}  // namespace fp8sm::runtime::device_detail
