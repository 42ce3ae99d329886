#include "kernels/scaling_meta.hpp"

#include <fmt/core.h>

#include <stdexcept>
#include <string>

namespace fp8sm::kernels {

ScalingMeta ScalingMeta::fresh(std::size_t history_length, std::size_t slots) {
  ScalingMeta meta;
  meta.history_length = history_length;
  meta.check("ScalingMeta::fresh");  // before sizing a vector with a bad length
  meta.amax_history.assign(history_length * slots, 0.0f);
  meta.scale.assign(slots, 1.0f);
  return meta;
}

void ScalingMeta::check(const char* what) const {
  if (history_length < 1) {
    throw std::invalid_argument(fmt::format("{}: amax history length must be at least 1, got 0", what));
  }
  if (amax_history.size() != history_length * slots()) {
    throw std::invalid_argument(fmt::format("{}: amax_history has {} entries, expected {} x {}", what,
                                            amax_history.size(), history_length, slots()));
  }
}

}  // namespace fp8sm::kernels
