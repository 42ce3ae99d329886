#include "kernels/gemm.hpp"

#include <fmt/core.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace fp8sm::kernels {
namespace {

void require_buffer(const void* data, std::size_t rows, std::size_t cols, const char* name) {
  if (data == nullptr && rows != 0 && cols != 0) {
    throw std::invalid_argument(fmt::format("gemm_tn: null {} for {} x {}", name, rows, cols));
  }
}

}  // namespace

// Each code is decoded once, through a table of its format's 256 values, instead of once per
// product: the same floats, multiplied and summed in the same order, so the same bits.
void gemm_tn(const Fp8Operand& a, const Fp8Operand& b, std::size_t k, float* c) {
  require_buffer(a.data, a.rows, k, "A");
  require_buffer(b.data, b.rows, k, "B");
  require_buffer(c, a.rows, b.rows, "C");
  const float dequant = a.scale_inv * b.scale_inv;
  const auto decoded = [k](const Fp8Operand& m) {
    float table[256];
    for (int code = 0; code < 256; ++code) table[code] = from_fp8(static_cast<std::uint8_t>(code), m.format);
    std::vector<float> values(m.rows * k);
    for (std::size_t i = 0; i < values.size(); ++i) values[i] = table[m.data[i]];
    return values;
  };
  const std::vector<float> a_values = decoded(a);
  const std::vector<float> b_values = decoded(b);
  for (std::size_t i = 0; i < a.rows; ++i) {
    const float* a_row = a_values.data() + i * k;
    for (std::size_t j = 0; j < b.rows; ++j) {
      const float* b_row = b_values.data() + j * k;
      float acc = 0.0f;
      for (std::size_t p = 0; p < k; ++p) acc += a_row[p] * b_row[p];
      c[i * b.rows + j] = acc * dequant;
    }
  }
}

}  // namespace fp8sm::kernels
