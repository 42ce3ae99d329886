#include "kernels/dequantize.hpp"

#include <stdexcept>
#include <string>

namespace fp8sm::kernels {

void dequantize(const std::uint8_t* input, std::size_t count, Format format, float scale_inv,
                float* output) {
  if (count != 0 && (input == nullptr || output == nullptr)) {
    throw std::invalid_argument("dequantize: null buffer for " + std::to_string(count) +
                                " elements");
  }
  for (std::size_t i = 0; i < count; ++i) output[i] = from_fp8(input[i], format) * scale_inv;
}

}  // namespace fp8sm::kernels
