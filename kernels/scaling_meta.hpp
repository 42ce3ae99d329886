// The persistent delayed-scaling state of one module in one direction: TE's
// fp8_meta["scaling_fwd"] or ["scaling_bwd"] (spec §6, Recipe fields). A runtime holds one per
// module per direction, points each cast's amax at `amax(0, slot)`, and hands a key's metas to
// update_scales (scale_update.hpp).
#pragma once

#include <cstddef>
#include <vector>

namespace fp8sm::kernels {

struct ScalingMeta {
  // L = amax_history_len, >= 1.
  std::size_t history_length = 1;
  // L x slots, row-major: amax_history[row * slots() + slot]. Row 0 is the current amax, folded
  // into by every cast since the last update; rows 1..L-1 are the previous amaxes, newest last.
  std::vector<float> amax_history;
  // One per quantizer slot (the slot count is scale.size()).
  std::vector<float> scale;

  // The state a module starts with: history all 0, scale 1.0 (spec §6). Throws
  // std::invalid_argument when history_length is 0.
  static ScalingMeta fresh(std::size_t history_length, std::size_t slots);

  std::size_t slots() const { return scale.size(); }
  float& amax(std::size_t row, std::size_t slot) { return amax_history[row * slots() + slot]; }
  float amax(std::size_t row, std::size_t slot) const {
    return amax_history[row * slots() + slot];
  }

  // Throws std::invalid_argument, naming `what` and the offending field, unless
  // history_length >= 1 and amax_history has history_length x slots() entries.
  void check(const char* what) const;
};

}  // namespace fp8sm::kernels
