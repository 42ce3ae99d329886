#include "kernels/amax.hpp"

#include <cstdint>

#include "kernels/detail/float_bits.hpp"

namespace fp8sm::kernels {

float amax_fold(float amax, float value) {
  const std::uint32_t magnitude = detail::bits_of(value) & ~detail::kSignBit;
  const auto current = static_cast<std::int32_t>(detail::bits_of(amax));
  return static_cast<std::int32_t>(magnitude) > current ? detail::float_of(magnitude) : amax;
}

}  // namespace fp8sm::kernels
