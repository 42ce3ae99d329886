#include "runtime/matrix.hpp"

#include <fmt/core.h>

#include <cmath>
#include <cstddef>
#include <limits>
#include <stdexcept>

namespace fp8sm::runtime {

std::size_t value_count(std::size_t rows, std::size_t cols, const std::string& what) {
  // A vector of floats can hold at most PTRDIFF_MAX bytes.
  constexpr std::size_t kMaxValues = static_cast<std::size_t>(std::numeric_limits<std::ptrdiff_t>::max()) / sizeof(float);
  if (cols != 0 && rows > kMaxValues / cols) {
    throw std::invalid_argument(
        fmt::format("{}: {} x {} values do not fit in memory (at most {} values a matrix)", what, rows, cols, kMaxValues));
  }
  return rows * cols;
}

Matrix::Matrix(std::size_t r, std::size_t c, float fill) : rows(r), cols(c), values(value_count(r, c, "Matrix"), fill) {}

Matrix::Matrix(const Matrix& other)
    : rows(other.rows), cols(other.cols), values(other.values), device(other.device ? other.device->clone() : nullptr) {}

Matrix& Matrix::operator=(const Matrix& other) {
  if (this == &other) return *this;
  if (device && other.device && device->count() == other.device->count()) {
    device->copy_from(*other.device);  // the memory stays where it is
    rows = other.rows;
    cols = other.cols;
    values.clear();
    return *this;
  }
  Matrix copy(other);
  *this = std::move(copy);
  return *this;
}

Matrix Matrix::to_host() const {
  if (!device) return *this;
  Matrix host(rows, cols);
  device->download(host.values.data());
  return host;
}

bool Matrix::operator==(const Matrix& o) const {
  if (rows != o.rows || cols != o.cols) return false;
  if (!device && !o.device) return values == o.values;
  return to_host().values == o.to_host().values;
}

void require_well_formed(const Matrix& m, const std::string& what) {
  const std::size_t count = value_count(m.rows, m.cols, what);
  const std::size_t held = m.on_device() ? m.device->count() : m.values.size();
  if (held != count) {
    throw std::invalid_argument(fmt::format("{}: a {} x {} matrix holds {} values, not {} (were its rows or cols set by "
                                            "hand?)",
                                            what, m.rows, m.cols, held, count));
  }
}

void require_shape(const Matrix& m, Shape shape, const std::string& what) {
  require_well_formed(m, what);
  if (m.shape() != shape) {
    throw std::invalid_argument(fmt::format("{}: is {} x {}, the module's is {} x {}", what, m.rows, m.cols, shape.rows,
                                            shape.cols));
  }
}

void require_program_value(const Matrix& m, const std::string& what) {
  require_well_formed(m, what);
  if (m.rows == 0 || m.cols == 0) {
    throw std::invalid_argument(
        fmt::format("{}: a {} x {} matrix holds no values (at least one row and one column)", what, m.rows, m.cols));
  }
  require_finite(m, what);
}

void require_finite(const Matrix& m, const std::string& what) {
  for (std::size_t i = 0; i < m.values.size(); ++i) {
    if (!std::isfinite(m.values[i])) {
      throw std::invalid_argument(fmt::format("{}: {} at ({}, {})", what, std::isnan(m.values[i]) ? "NaN" : "infinity",
                                              i / m.cols, i % m.cols));
    }
  }
}

}  // namespace fp8sm::runtime
