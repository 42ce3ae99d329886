// A dense row-major float matrix: the runtime's activations, weights and gradients. Its values
// live where the context's backend computes: on the host (`values`, the CPU backend, and every
// matrix a program makes), or in device memory (`device`, a device backend: then `values` is
// empty). Matrices are values: a copy of a device matrix is a copy on its device, and copying
// into a device matrix of the same size reuses its memory (the address stays).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace fp8sm::runtime {

// A matrix's values in device memory: what a device backend makes (device_backend_memory.hpp).
class DeviceValues {
 public:
  virtual ~DeviceValues() = default;
  virtual std::unique_ptr<DeviceValues> clone() const = 0;
  // `other` holds as many values: copied into this memory, on the device.
  virtual void copy_from(const DeviceValues& other) = 0;
  // Into `host` (count floats): a download, counted by the device as a host copy.
  virtual void download(float* host) const = 0;
  virtual std::size_t count() const = 0;
};

// A matrix's rows and columns.
struct Shape {
  std::size_t rows = 0;
  std::size_t cols = 0;
  bool operator==(const Shape& o) const { return rows == o.rows && cols == o.cols; }
  bool operator!=(const Shape& o) const { return !(*this == o); }
};

struct Matrix {
  std::size_t rows = 0;
  std::size_t cols = 0;
  std::vector<float> values;             // rows x cols, row-major, when on the host
  std::unique_ptr<DeviceValues> device;  // the values, when in device memory

  Matrix() = default;
  // Throws std::invalid_argument when r x c values (or their bytes) overflow the address space.
  Matrix(std::size_t r, std::size_t c, float fill = 0.0f);
  Matrix(const Matrix& other);
  Matrix& operator=(const Matrix& other);
  Matrix(Matrix&&) noexcept = default;
  Matrix& operator=(Matrix&&) noexcept = default;
  ~Matrix() = default;

  bool on_device() const { return device != nullptr; }
  Shape shape() const { return {rows, cols}; }
  std::size_t size() const { return rows * cols; }
  // Whether it holds values (a default matrix, or one whose saved values were dropped, does not).
  bool held() const { return on_device() || !values.empty(); }
  // The values on the host: this matrix, or a download of a device one.
  Matrix to_host() const;

  // Host matrices only.
  float& at(std::size_t r, std::size_t c) { return values[r * cols + c]; }
  float at(std::size_t r, std::size_t c) const { return values[r * cols + c]; }
  // Shapes and values, wherever they live (a device matrix is downloaded to compare).
  bool operator==(const Matrix& o) const;
  bool operator!=(const Matrix& o) const { return !(*this == o); }
};

// rows x cols as a count of values: std::invalid_argument naming `what` and the sizes when the
// product, or its bytes, does not fit the address space (a product that wraps would hold
// nothing, or a few values, where the caller counts on billions).
std::size_t value_count(std::size_t rows, std::size_t cols, const std::string& what);

// std::invalid_argument naming `what` unless `m` holds rows x cols values: its fields are public,
// and a matrix whose rows or cols were set by hand would let a kernel read past its values.
void require_well_formed(const Matrix& m, const std::string& what);

// A parameter as its module needs it: well-formed and `shape` (a program may have replaced it
// through its accessor). std::invalid_argument naming `what` otherwise.
void require_shape(const Matrix& m, Shape shape, const std::string& what);

// What a program hands the runtime as a value (an input, a chain's input, a gradient seed):
// well-formed, at least one row and one column (a batch of nothing has no tensor to record, and
// every layer's saved state would read as "not saved"), and finite where its values are on the
// host. std::invalid_argument naming `what` otherwise.
void require_program_value(const Matrix& m, const std::string& what);

// Throws std::invalid_argument naming `what` and the first NaN or infinity, if any: FP8 casts
// would saturate an infinity and fold a NaN into the amax history, silently. A device matrix is
// not read back for this (that would be a host round trip per operation): values are checked
// where they enter a device backend (Backend::to_backend), not again at each operation.
void require_finite(const Matrix& m, const std::string& what);

}  // namespace fp8sm::runtime
