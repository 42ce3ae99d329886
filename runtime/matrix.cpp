#include "runtime/matrix.hpp"

#include <fmt/core.h>

#include <cmath>
#include <stdexcept>

namespace fp8sm::runtime {

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

void require_finite(const Matrix& m, const std::string& what) {
  for (std::size_t i = 0; i < m.values.size(); ++i) {
    if (!std::isfinite(m.values[i])) {
      throw std::invalid_argument(fmt::format("{}: {} at ({}, {})", what, std::isnan(m.values[i]) ? "NaN" : "infinity",
                                              i / m.cols, i % m.cols));
    }
  }
}

}  // namespace fp8sm::runtime
