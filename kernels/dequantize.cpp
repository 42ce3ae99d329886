#include "kernels/dequantize.hpp"

#include <fmt/core.h>

#include <stdexcept>
#include <string>

namespace fp8sm::kernels {

void dequantize(const std::uint8_t* input, std::size_t count, Format format, float scale_inv,
                float* output) {
  if (count != 0 && (input == nullptr || output == nullptr)) {
    throw std::invalid_argument(fmt::format("dequantize: null buffer for {} elements", count));
  }
  for (std::size_t i = 0; i < count; ++i) output[i] = from_fp8(input[i], format) * scale_inv;
}

}  // namespace fp8sm::kernels
