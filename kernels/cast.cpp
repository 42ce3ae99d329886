#include "kernels/cast.hpp"

#include <fmt/core.h>

#include <limits>
#include <stdexcept>
#include <string>

#include "kernels/amax.hpp"

namespace fp8sm::kernels {
namespace {

float widen(float value) { return value; }
float widen(Bf16 value) { return to_float(value); }

void require(bool ok, const char* operation, const std::string& what) {
  if (!ok) throw std::invalid_argument(fmt::format("{}: {}", operation, what));
}

template <typename Input>
float cast(const Input* input, std::size_t count, float scale, Format format,
           std::uint8_t* output, float& amax) {
  require(count == 0 || (input != nullptr && output != nullptr), "cast_to_fp8",
          fmt::format("null buffer for {} elements", count));
  float local_amax = amax;
  for (std::size_t i = 0; i < count; ++i) {
    const float x = widen(input[i]);
    output[i] = to_fp8(x * scale, format);
    local_amax = amax_fold(local_amax, x);
  }
  amax = local_amax;
  return scale_inverse(scale);
}

template <typename Input>
float cast_transpose(const Input* input, std::size_t rows, std::size_t cols, float scale,
                     Format format, std::uint8_t* output, std::uint8_t* output_t, float& amax) {
  const char* operation = "cast_transpose_to_fp8";
  require(cols == 0 || rows <= std::numeric_limits<std::size_t>::max() / cols, operation,
          fmt::format("{} x {} elements overflow size_t", rows, cols));
  const std::size_t count = rows * cols;
  require(count == 0 || (input != nullptr && output != nullptr && output_t != nullptr),
          operation, fmt::format("null buffer for {} x {}", rows, cols));
  float local_amax = amax;
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < cols; ++c) {
      const float x = widen(input[r * cols + c]);
      const std::uint8_t code = to_fp8(x * scale, format);
      output[r * cols + c] = code;
      output_t[c * rows + r] = code;
      local_amax = amax_fold(local_amax, x);
    }
  }
  amax = local_amax;
  return scale_inverse(scale);
}

}  // namespace

float scale_inverse(float scale) { return 1.0f / scale; }

float cast_to_fp8(const float* input, std::size_t count, float scale, Format format,
                  std::uint8_t* output, float& amax) {
  return cast(input, count, scale, format, output, amax);
}

float cast_to_fp8(const Bf16* input, std::size_t count, float scale, Format format,
                  std::uint8_t* output, float& amax) {
  return cast(input, count, scale, format, output, amax);
}

float cast_transpose_to_fp8(const float* input, std::size_t rows, std::size_t cols, float scale,
                            Format format, std::uint8_t* output, std::uint8_t* output_t,
                            float& amax) {
  return cast_transpose(input, rows, cols, scale, format, output, output_t, amax);
}

float cast_transpose_to_fp8(const Bf16* input, std::size_t rows, std::size_t cols, float scale,
                            Format format, std::uint8_t* output, std::uint8_t* output_t,
                            float& amax) {
  return cast_transpose(input, rows, cols, scale, format, output, output_t, amax);
}

}  // namespace fp8sm::kernels
