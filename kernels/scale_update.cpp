#include "kernels/scale_update.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <stdexcept>
#include <string>

namespace fp8sm::kernels {
namespace {

constexpr float kFloatMax = std::numeric_limits<float>::max();
constexpr float kInfinity = std::numeric_limits<float>::infinity();

// One slot's column of a meta's row-major history.
class SlotHistory {
 public:
  SlotHistory(ScalingMeta& meta, std::size_t slot)
      : base_(meta.amax_history.data() + slot), stride_(meta.slots()),
        length_(meta.history_length) {}

  float& operator[](std::size_t row) { return base_[row * stride_]; }
  std::size_t length() const { return length_; }

  // Both paths end the same way: the newest amax goes to the last row, the older ones move up
  // one row (the oldest, row 1, drops out), and row 0 starts empty for the next casts.
  void roll_in(float newest) {
    for (std::size_t row = 1; row + 1 < length_; ++row) (*this)[row] = (*this)[row + 1];
    (*this)[length_ - 1] = newest;
    (*this)[0] = 0.0f;  // after the line above, so that L = 1 ends with 0
  }

 private:
  float* base_;
  std::size_t stride_;
  std::size_t length_;
};

bool usable(float amax) { return std::isfinite(amax) && amax > 0.0f; }

float fused_slot(SlotHistory h, float reduced, float previous_scale, AmaxComputeAlgo algo,
                 float scaled_max) {
  const float last = reduced != 0.0f ? reduced : h[0];
  float amax = 0.0f;
  if (last != 0.0f) {
    amax = last;
    for (std::size_t row = 1; row < h.length(); ++row) amax = std::fmax(amax, h[row]);
    h.roll_in(last);
  }
  if (algo == AmaxComputeAlgo::MostRecent) amax = last;
  const float scale = usable(amax) ? scaled_max / amax : previous_scale;
  return scale == kInfinity ? kFloatMax : scale;
}

// torch.max over the history: NaN as soon as one entry is NaN.
float max_propagating_nan(SlotHistory h) {
  float amax = h[0];
  for (std::size_t row = 1; row < h.length(); ++row) {
    if (std::isnan(amax) || std::isnan(h[row])) return std::numeric_limits<float>::quiet_NaN();
    if (h[row] > amax) amax = h[row];
  }
  return amax;
}

float unfused_slot(SlotHistory h, float reduced, float previous_scale, AmaxComputeAlgo algo,
                   float fp8_max_value, float margin_divisor) {
  h[0] = reduced;
  const float amax = algo == AmaxComputeAlgo::Max ? max_propagating_nan(h) : h[0];
  h.roll_in(h[0]);
  const float scale = usable(amax) ? (fp8_max_value / amax) / margin_divisor : previous_scale;
  return std::isinf(scale) ? kFloatMax : scale;
}

void check_arguments(const std::vector<ScalingMeta*>& metas,
                     const std::vector<float>& reduced_amax, const ScaleUpdateRecipe& recipe) {
  if (recipe.margin < 0) {
    throw std::invalid_argument(fmt::format("update_scales: margin must be >= 0, got {}", recipe.margin));
  }
  if (recipe.algo != AmaxComputeAlgo::Max && recipe.algo != AmaxComputeAlgo::MostRecent) {
    throw std::invalid_argument(
        fmt::format("update_scales: unknown amax_compute_algo {}", static_cast<int>(recipe.algo)));
  }
  if (recipe.path != UpdatePath::Fused && recipe.path != UpdatePath::Unfused) {
    throw std::invalid_argument(fmt::format("update_scales: unknown update path {}", static_cast<int>(recipe.path)));
  }
  (void)fp8_max(recipe.format);  // throws on an unknown format
  std::size_t slots = 0;
  for (std::size_t i = 0; i < metas.size(); ++i) {
    const std::string which = fmt::format("update_scales, meta {}", i);
    if (metas[i] == nullptr) throw std::invalid_argument(fmt::format("{}: null", which));
    metas[i]->check(which.c_str());
    slots += metas[i]->slots();
  }
  std::vector<const ScalingMeta*> sorted(metas.begin(), metas.end());
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
    throw std::invalid_argument("update_scales: a meta appears twice; it would be updated twice");
  }
  if (reduced_amax.size() != slots) {
    throw std::invalid_argument(
        fmt::format("update_scales: {} reduced amaxes for {} slots", reduced_amax.size(), slots));
  }
}

}  // namespace

std::vector<float> current_amaxes(const std::vector<ScalingMeta*>& metas) {
  std::vector<float> current;
  for (std::size_t i = 0; i < metas.size(); ++i) {
    const std::string which = fmt::format("current_amaxes, meta {}", i);
    if (metas[i] == nullptr) throw std::invalid_argument(fmt::format("{}: null", which));
    metas[i]->check(which.c_str());
    for (std::size_t slot = 0; slot < metas[i]->slots(); ++slot) {
      current.push_back(metas[i]->amax(0, slot));
    }
  }
  return current;
}

void update_scales(const std::vector<ScalingMeta*>& metas, const std::vector<float>& reduced_amax,
                   const ScaleUpdateRecipe& recipe) {
  check_arguments(metas, reduced_amax, recipe);
  const UpdateConstants constants = update_constants(recipe);
  std::size_t index = 0;
  for (ScalingMeta* meta : metas) {
    for (std::size_t slot = 0; slot < meta->slots(); ++slot, ++index) {
      float& scale = meta->scale[slot];
      const SlotHistory history(*meta, slot);
      scale = recipe.path == UpdatePath::Fused
                  ? fused_slot(history, reduced_amax[index], scale, recipe.algo, constants.scaled_max)
                  : unfused_slot(history, reduced_amax[index], scale, recipe.algo, constants.fp8_max,
                                 constants.margin_divisor);
    }
  }
}

UpdateConstants update_constants(const ScaleUpdateRecipe& recipe) {
  const float max_value = fp8_max(recipe.format);
  // Fused: fp8_max * 2^-margin; unfused divides by 2^margin. Both powers are float32.
  return {max_value, max_value * std::ldexp(1.0f, -recipe.margin), std::ldexp(1.0f, recipe.margin)};
}

}  // namespace fp8sm::kernels
