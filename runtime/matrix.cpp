#include "runtime/matrix.hpp"

#include <cmath>
#include <stdexcept>

namespace fp8sm::runtime {

void require_finite(const Matrix& m, const std::string& what) {
  for (std::size_t i = 0; i < m.values.size(); ++i) {
    if (!std::isfinite(m.values[i])) {
      throw std::invalid_argument(what + ": " + (std::isnan(m.values[i]) ? "NaN" : "infinity") + " at (" +
                                  std::to_string(i / m.cols) + ", " + std::to_string(i % m.cols) + ")");
    }
  }
}

}  // namespace fp8sm::runtime
