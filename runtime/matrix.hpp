// A dense row-major float matrix: the runtime's activations, weights and gradients.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace fp8sm::runtime {

struct Matrix {
  std::size_t rows = 0;
  std::size_t cols = 0;
  std::vector<float> values;  // rows x cols, row-major

  Matrix() = default;
  Matrix(std::size_t r, std::size_t c, float fill = 0.0f) : rows(r), cols(c), values(r * c, fill) {}

  float& at(std::size_t r, std::size_t c) { return values[r * cols + c]; }
  float at(std::size_t r, std::size_t c) const { return values[r * cols + c]; }
  bool operator==(const Matrix& o) const { return rows == o.rows && cols == o.cols && values == o.values; }
};

// Throws std::invalid_argument naming `what` and the first NaN or infinity, if any: FP8 casts
// would saturate an infinity and fold a NaN into the amax history, silently.
void require_finite(const Matrix& m, const std::string& what);

}  // namespace fp8sm::runtime
