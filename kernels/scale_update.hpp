// The amax-history/scale update of one registry key (spec §6, "Update of one registry key"):
// both of TE's paths, bit for bit, over all the key's metas at once, as the GPU version does
// in one launch.
//
//   std::vector<ScalingMeta*> key = {&m0.forward, &m1.forward};       // registration order
//   std::vector<float> a = current_amaxes(key);                       // step 1
//   /* step 2: all-reduce MAX of `a` across the group, if distributed */
//   update_scales(key, a, {Format::E4M3, margin, AmaxComputeAlgo::Max, UpdatePath::Fused});
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/fp8.hpp"
#include "kernels/scaling_meta.hpp"

namespace fp8sm::kernels {

// DelayedScaling.amax_compute_algo. TE also accepts a callable, which always takes the unfused
// path; a runtime that supports one computes it itself.
enum class AmaxComputeAlgo : std::uint8_t { Max, MostRecent };

// Fused: tex.fused_amax_and_scale_update_after_reduction (TE's default).
// Unfused: the Python path, taken with NVTE_UNFUSED_FP8_UPDATE=1 or a callable algo.
enum class UpdatePath : std::uint8_t { Fused, Unfused };

struct ScaleUpdateRecipe {
  // The dtype of the direction being updated; its fp8_max enters the scale. With
  // fp8_format HYBRID that is E4M3 forward and E5M2 backward.
  Format format = Format::E4M3;
  int margin = 0;  // >= 0
  AmaxComputeAlgo algo = AmaxComputeAlgo::Max;
  UpdatePath path = UpdatePath::Fused;
};

// Step 1: row 0 of every meta, concatenated in the given order.
std::vector<float> current_amaxes(const std::vector<ScalingMeta*>& metas);

// Steps 3 / 4: `reduced_amax` has one entry per slot of all `metas` together, in the order of
// current_amaxes (after step 2's all-reduce, or unchanged without one). Per slot, with history
// h[0..L-1], reduced value r, previous scale s, M = fp8_max(format):
//
// Fused:
//   last := r != 0 ? r : h[0]                          (NaN != 0)
//   last != 0: amax := fmaxf over {last, h[1..L-1]}    (NaN ignored unless all are NaN)
//              h := [0, h[2..L-1], last]               (L = 1: h := [0])
//   last == 0: amax := 0, h unchanged
//   MostRecent: amax := last
//   scale := amax finite and > 0 ? (M * 2^-margin) / amax : s;  +inf -> FLT_MAX
//            (2^-margin is float32, so 0 past margin 149; the product with M is exact before)
// Unfused:
//   h[0] := r
//   amax := Max ? max over h[0..L-1], NaN if any is NaN : h[0]
//   h := [0, h[2..L-1], h[0]]                          (always, also when r is 0)
//   sf := (M / amax) / 2^margin                        (two float32 roundings; 2^margin is
//                                                      float32, +inf past margin 127)
//   scale := amax > 0 and finite ? sf : s;  ±inf -> FLT_MAX
//
// Every argument is checked before anything changes: a null meta, a meta whose sizes disagree
// or whose history length is 0 (ScalingMeta::check), a reduced_amax of the wrong size, a
// negative margin or an unknown enum value throws std::invalid_argument saying which.
void update_scales(const std::vector<ScalingMeta*>& metas, const std::vector<float>& reduced_amax,
                   const ScaleUpdateRecipe& recipe);

// The float32 constants of the update, shared with the CUDA version so that both use the same
// bits: M, M * 2^-margin (fused) and 2^margin (unfused divides by it).
struct UpdateConstants {
  float fp8_max;
  float scaled_max;
  float margin_divisor;
};
UpdateConstants update_constants(const ScaleUpdateRecipe& recipe);

}  // namespace fp8sm::kernels
