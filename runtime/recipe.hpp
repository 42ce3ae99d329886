// TE's DelayedScaling recipe (spec §6 "Recipe fields"), the fields the runtime implements.
#pragma once

#include <cstddef>

#include "kernels/fp8.hpp"
#include "kernels/scale_update.hpp"

namespace fp8sm::runtime {

// DelayedScaling.fp8_format. E5M2 is not offered: TE rejects it at recipe construction.
enum class Fp8Format { Hybrid, E4M3 };

struct Recipe {
  int margin = 0;
  std::size_t amax_history_len = 1024;
  kernels::AmaxComputeAlgo amax_compute_algo = kernels::AmaxComputeAlgo::Max;
  Fp8Format fp8_format = Fp8Format::Hybrid;
  bool reduce_amax = true;
  // TE's default fused update, or NVTE_UNFUSED_FP8_UPDATE=1's Python path.
  kernels::UpdatePath update_path = kernels::UpdatePath::Fused;

  // Forward tensors (input, weight) and backward tensors (gradients).
  kernels::Format forward_format() const { return kernels::Format::E4M3; }
  kernels::Format backward_format() const {
    return fp8_format == Fp8Format::Hybrid ? kernels::Format::E5M2 : kernels::Format::E4M3;
  }
  kernels::ScaleUpdateRecipe update(bool backward) const {
    return {backward ? backward_format() : forward_format(), margin, amax_compute_algo, update_path};
  }
  // Throws std::invalid_argument saying which field is out of range.
  void validate() const;
};

}  // namespace fp8sm::runtime
