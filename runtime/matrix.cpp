#include "runtime/matrix.hpp"

#include <fmt/core.h>

#include <cmath>
#include <stdexcept>

namespace fp8sm::runtime {

void require_finite(const Matrix& m, const std::string& what) {
  for (std::size_t i = 0; i < m.values.size(); ++i) {
    if (!std::isfinite(m.values[i])) {
      throw std::invalid_argument(fmt::format("{}: {} at ({}, {})", what, std::isnan(m.values[i]) ? "NaN" : "infinity",
                                              i / m.cols, i % m.cols));
    }
  }
}

}  // namespace fp8sm::runtime
