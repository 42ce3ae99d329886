// The device backend's FP8 metas (device_backend_impl.hpp): a module's fresh meta, made on the
// host and uploaded once; row 0 cleared; and spec §6's update of one registry key, every tensor
// of the key in one launch, reduced over the amax group on the way (on the device for a device
// group, through the host for a host one: the one copy a step may make).
#include <fmt/core.h>

#include <cstdint>
#include <stdexcept>
#include <utility>
#include <vector>

#include "runtime/device_backend_impl.hpp"

namespace fp8sm::runtime::device_detail {

MetaTensors DeviceBackend::fresh_meta(std::size_t history_length, std::size_t slots) {
  MetaTensors meta = Backend::fresh_meta(history_length, slots);  // on the host, then up once
  meta.amax_history = to_backend(std::move(meta.amax_history));
  meta.scale = to_backend(std::move(meta.scale));
  return meta;
}

void DeviceBackend::discard_current_amax(MetaTensors& meta) {
  device().zero(pointer(meta.amax_history), meta.slots * sizeof(float), stream());  // row 0
}

void DeviceBackend::reduce_and_update(const std::vector<MetaTensors*>& metas, AmaxReductionGroup* group,
                                      bool reduce_amax, const kernels::ScaleUpdateRecipe& recipe) {
  if (metas.empty()) return;
  for (const MetaTensors* m : metas) {
    if (m->history_length != metas.front()->history_length) {
      throw std::invalid_argument("reduce_and_update: the metas of one key must share one amax history length");
    }
  }
  KeyArrays& key = key_arrays(metas);
  const auto tensors = static_cast<unsigned>(metas.size());
  const auto total = static_cast<unsigned>(key.amaxes.count());
  // Steps 1 and 2: the current amaxes, reduced over the group where it is distributed.
  device().gather_amaxes(key.histories.get(), key.slot_begin.get(), tensors, total, key.amaxes.get(), stream());
  if (reduce_amax && group != nullptr && group->size() > 1) {
    if (auto* on_device = dynamic_cast<DeviceAmaxReduction*>(group)) {
      on_device->all_reduce_max_on_device(device(), key.amaxes.get(), total, stream());
    } else {
      // A host group (MPI): the amaxes go down and come back, the one copy a step may make.
      std::vector<float> amaxes(total);
      device().download(amaxes.data(), key.amaxes.get(), total * sizeof(float), stream());
      group->all_reduce_max(amaxes);
      if (amaxes.size() != total) {
        throw std::logic_error(fmt::format("amax reduction group {} returned {} amaxes for {}", group->name(),
                                           amaxes.size(), total));
      }
      device().upload(key.amaxes.get(), amaxes.data(), total * sizeof(float), stream());
    }
  }
  // Steps 3 and 4: every tensor of the key in one launch.
  device().scale_update(key.histories.get(), key.scales.get(), key.amaxes.get(), key.slot_begin.get(), tensors, total,
                        static_cast<unsigned>(metas.front()->history_length), recipe, stream());
}

// A key is named by its metas' device addresses and slots: the live metas never move, so the
// same key finds the arrays uploaded the first time.
KeyArrays& DeviceBackend::key_arrays(const std::vector<MetaTensors*>& metas) {
  std::vector<const void*> id;
  std::vector<float*> histories, scales;
  std::vector<unsigned> slot_begin = {0};
  for (const MetaTensors* m : metas) {
    histories.push_back(pointer(m->amax_history));
    scales.push_back(pointer(m->scale));
    slot_begin.push_back(slot_begin.back() + static_cast<unsigned>(m->slots));
    id.push_back(histories.back());
    id.push_back(scales.back());
    id.push_back(reinterpret_cast<const void*>(static_cast<std::uintptr_t>(m->slots)));
  }
  auto found = keys_.find(id);
  if (found != keys_.end()) return *found->second;
  auto arrays = std::make_unique<KeyArrays>(session_, metas.size(), slot_begin.back());
  device().upload(arrays->histories.get(), histories.data(), histories.size() * sizeof(float*), stream());
  device().upload(arrays->scales.get(), scales.data(), scales.size() * sizeof(float*), stream());
  device().upload(arrays->slot_begin.get(), slot_begin.data(), slot_begin.size() * sizeof(unsigned), stream());
  return *keys_.emplace(std::move(id), std::move(arrays)).first->second;
}

}  // namespace fp8sm::runtime::device_detail
