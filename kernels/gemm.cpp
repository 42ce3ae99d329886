#include "kernels/gemm.hpp"

#include <fmt/core.h>

#include <stdexcept>
#include <string>

namespace fp8sm::kernels {
namespace {

void require_buffer(const void* data, std::size_t rows, std::size_t cols, const char* name) {
  if (data == nullptr && rows != 0 && cols != 0) {
    throw std::invalid_argument(fmt::format("gemm_tn: null {} for {} x {}", name, rows, cols));
  }
}

}  // namespace

void gemm_tn(const Fp8Operand& a, const Fp8Operand& b, std::size_t k, float* c) {
  require_buffer(a.data, a.rows, k, "A");
  require_buffer(b.data, b.rows, k, "B");
  require_buffer(c, a.rows, b.rows, "C");
  const float dequant = a.scale_inv * b.scale_inv;
  for (std::size_t i = 0; i < a.rows; ++i) {
    const std::uint8_t* a_row = a.data + i * k;
    for (std::size_t j = 0; j < b.rows; ++j) {
      const std::uint8_t* b_row = b.data + j * k;
      float acc = 0.0f;
      for (std::size_t p = 0; p < k; ++p) {
        acc += from_fp8(a_row[p], a.format) * from_fp8(b_row[p], b.format);
      }
      c[i * b.rows + j] = acc * dequant;
    }
  }
}

}  // namespace fp8sm::kernels
