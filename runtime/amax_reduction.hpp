// Step 2 of the update of one registry key (spec §6): in data-parallel training every rank
// casts different data, so before the scales are updated the current amaxes are all-reduced
// with MAX over the key's group, and every rank then updates the same history to the same
// scales. Without it each rank would scale by its own data only.
//
//   std::vector<kernels::ScalingMeta*> key = {&m0.forward, &m1.forward};  // registration order
//   runtime::MpiGroup group;                                  // or SingleProcessGroup, or none
//   runtime::reduce_and_update(key, &group, recipe_reduce_amax, update_recipe);
//
// A key is a (recipe, group) pair: metas updated with different groups are different keys and
// need separate calls.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "kernels/scale_update.hpp"
#include "kernels/scaling_meta.hpp"

namespace fp8sm::kernels::cuda {
class Device;
}

namespace fp8sm::runtime {

// One data-parallel group: TE's amax_reduction_group (the default group when that is None).
class AmaxReductionGroup {
 public:
  virtual ~AmaxReductionGroup() = default;

  virtual int size() const = 0;  // world size of the group
  virtual int rank() const = 0;  // this process's rank in it, 0 .. size()-1

  // Element-wise maximum over every rank of the group, in place, synchronous: every rank calls
  // it with a vector of the same length and gets the same result. The maximum is taken in the
  // order of amax_order.hpp, so a NaN amax on any rank makes the result NaN on every rank, as
  // it does in one process's amax_fold; implementations reduce amax_order_key values with an
  // integer MAX rather than floats, whose MAX leaves NaN to the implementation.
  virtual void all_reduce_max(std::vector<float>& amaxes) = 0;

  virtual std::string name() const = 0;  // for error messages
};

// A group that can also reduce amaxes where a device backend keeps them (NCCL), so that the
// update of a key needs no copy to the host and back. The device backend hands such a group the
// key's amaxes in device memory; any other group gets them copied to the host (MPI).
class DeviceAmaxReduction {
 public:
  virtual ~DeviceAmaxReduction() = default;
  // all_reduce_max on `count` amaxes in `device`'s memory, issued on `stream` (the backend's),
  // in the same order (amax_order.hpp) and with the same result as all_reduce_max.
  virtual void all_reduce_max_on_device(kernels::cuda::Device& device, float* amaxes, std::size_t count,
                                        void* stream) = 0;
};

// No distribution (or a group of one): all_reduce_max leaves the amaxes as they are.
class SingleProcessGroup final : public AmaxReductionGroup {
 public:
  int size() const override { return 1; }
  int rank() const override { return 0; }
  void all_reduce_max(std::vector<float>& /*amaxes*/) override {}
  std::string name() const override { return "single process"; }
};

// Spec §6 steps 1-4 for the metas of one key, in registration order:
// 1. A := kernels::current_amaxes(key_metas);
// 2. if reduce_amax, group != nullptr and group->size() > 1: group->all_reduce_max(A);
// 3/4. kernels::update_scales(key_metas, A, recipe).
// `group` null means distributed training is not initialised. Every rank of a group must call
// this for the same key with the same number of slots, as for any collective.
// Throws what current_amaxes and update_scales throw (std::invalid_argument, before anything
// changes), what the group throws, and std::logic_error naming the group when its
// all_reduce_max returned a different number of amaxes than it was given.
// Steps 1 and 2 alone: the amaxes the update of the key takes (for a backend that updates
// elsewhere, e.g. on a GPU). Throws as reduce_and_update does.
std::vector<float> reduced_amaxes(const std::vector<kernels::ScalingMeta*>& key_metas, AmaxReductionGroup* group,
                                  bool reduce_amax);

void reduce_and_update(const std::vector<kernels::ScalingMeta*>& key_metas,
                       AmaxReductionGroup* group, bool reduce_amax,
                       const kernels::ScaleUpdateRecipe& recipe);

}  // namespace fp8sm::runtime
