#include "runtime/amax_reduction.hpp"

#include <fmt/core.h>

#include <cstddef>
#include <stdexcept>
#include <string>

namespace fp8sm::runtime {

std::vector<float> reduced_amaxes(const std::vector<kernels::ScalingMeta*>& key_metas, AmaxReductionGroup* group,
                                  bool reduce_amax) {
  std::vector<float> amaxes = kernels::current_amaxes(key_metas);
  if (reduce_amax && group != nullptr && group->size() > 1) {
    const std::size_t slots = amaxes.size();
    group->all_reduce_max(amaxes);
    // update_scales would reject the wrong count too, but as a bad argument; this is a broken
    // group, and the message should say which.
    if (amaxes.size() != slots) {
      throw std::logic_error(fmt::format("reduce_and_update: amax reduction group '{}' returned {} amaxes for {} slots",
                                         group->name(), amaxes.size(), slots));
    }
  }
  return amaxes;
}

void reduce_and_update(const std::vector<kernels::ScalingMeta*>& key_metas,
                       AmaxReductionGroup* group, bool reduce_amax,
                       const kernels::ScaleUpdateRecipe& recipe) {
  kernels::update_scales(key_metas, reduced_amaxes(key_metas, group, reduce_amax), recipe);
}

}  // namespace fp8sm::runtime
