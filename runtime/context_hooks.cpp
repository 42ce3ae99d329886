// The table's actions (statemachine/hooks.hpp), computed on the backend: the amax reductions
// and scale updates, and the stashes of the live forward meta that recomputes restore.
#include "runtime/context.hpp"

#include "driver/driver.hpp"

namespace fp8sm::runtime {

using spec::CaptureId;
using spec::ModuleId;

// ---- hooks ------------------------------------------------------------------------------------

void Context::update(bool backward) {
  std::vector<MetaTensors*> key;
  for (ModuleId m : registry_) key.push_back(backward ? &modules_[m].backward : &modules_[m].forward);
  backend_->reduce_and_update(key, group_, recipe_.reduce_amax, recipe_.update(backward));
}

void Context::forward_update() {
  ++counts_.forward_updates;
  update(false);
}

void Context::backward_update() {
  ++counts_.backward_updates;
  update(true);
}

void Context::discard_forward_amax() {
  for (ModuleState& m : modules_) backend_->discard_current_amax(m.forward);
}

// The stashes copy whole metas, and restoring copies into the live meta (on a device backend,
// device to device, into the same memory: the live meta never moves).
void Context::registered(ModuleId m) { registry_.push_back(m); }
void Context::stash(ModuleId m) { modules_[m].stash.push_back(modules_[m].forward); }
void Context::save_for_restore(ModuleId m) { modules_[m].updated = modules_[m].forward; }

void Context::pop_stash(ModuleId m) {
  ModuleState& meta = modules_[m];
  if (meta.stash.empty()) return;  // the table raises IndexError itself
  meta.forward = meta.stash.front();
  meta.stash.pop_front();
}

void Context::restore(ModuleId m) {
  if (modules_[m].updated) modules_[m].forward = *modules_[m].updated;
}

void Context::stash_for(ModuleId m, CaptureId c) { checkpoint_stash_[c].emplace_back(m, modules_[m].forward); }

void Context::replay_stash(ModuleId m, CaptureId c, unsigned occurrence) {
  unsigned seen = 0;
  for (const auto& [stashed, value] : checkpoint_stash_[c]) {
    if (stashed == m && seen++ == occurrence) {
      modules_[m].forward = value;
      return;
    }
  }
}

void Context::release_stash(CaptureId c) { checkpoint_stash_.erase(c); }
void Context::claimed(ModuleId /*m*/, bool owner) { driver_->claimed(owner); }

}  // namespace fp8sm::runtime
