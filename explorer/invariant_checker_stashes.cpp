// The checker, I4, I5 and I9: checkpoint extents, stashes and their pairing, what a recompute
// sees against its original forward, registration.
#include "explorer/invariant_checker.hpp"

#include <algorithm>
#include <string>
#include <utility>

namespace fp8sm::explorer {

using spec::Invariant;

// ---- I4 / I5: extents, stash and fidelity -------------------------------------------------------

void InvariantChecker::checkpoint_forward_begin(CaptureId c) { extents_.push_back(Extent{c, false, {}, {}}); }

void InvariantChecker::checkpoint_forward_end(CaptureId, bool) { extents_.pop_back(); }

void InvariantChecker::recompute_begin(CaptureId c) {
  if (installed_from_ && *installed_from_ != c) {
    violate(Invariant::I4, "a recompute installed the ownership bit captured by another checkpoint");
  }
  installed_from_.reset();
  extents_.push_back(Extent{c, true, {}, {}});
}

void InvariantChecker::recompute_end(CaptureId) {
  const Extent& extent = extents_.back();
  for (const auto& [m, before] : extent.before_pop) {
    if (module(m).numerics.forward != before) {
      violate(Invariant::I5, "a recompute leaves module #" + std::to_string(m) + "'s forward scaling changed");
    }
  }
  extents_.pop_back();
}

void InvariantChecker::ownership_installed(CaptureId c) { installed_from_ = c; }

void InvariantChecker::module_computed(ModuleId m, bool recompute) {
  if (!machine_->module(m).fp8) return;  // no FP8 cast, nothing read or accumulated
  SymbolicMeta& meta = module(m).numerics.forward;
  for (Extent& extent : extents_) {
    if (!extent.recompute) {
      original_seen_[extent.capture][m].push_back(meta.history);
      continue;
    }
    const int k = extent.occurrences[m]++;
    const auto& seen = original_seen_[extent.capture][m];
    if (k < static_cast<int>(seen.size()) && seen[static_cast<std::size_t>(k)] != meta.history) {
      violate(Invariant::I5, "a recompute of module #" + std::to_string(m) +
                                 " sees other forward scaling than its original forward");
    }
  }
  meta.accumulate(amax_tag(m, step_, meta.history, false), recompute, step_);
}

void InvariantChecker::registered(ModuleId m) {
  ModuleState& state = module(m);
  if (state.registered) violate(Invariant::I9, "module #" + std::to_string(m) + " registered twice");
  const bool in_recompute = std::any_of(extents_.begin(), extents_.end(), [](const Extent& e) { return e.recompute; });
  if (in_recompute) violate(Invariant::I9, "module #" + std::to_string(m) + " first registered during a recompute");
  state.registered = true;
}

void InvariantChecker::stash(ModuleId m) {
  ModuleState& state = module(m);
  StashEntry entry;
  entry.value = state.numerics.forward;
  entry.step = step_;
  if (!extents_.empty()) {
    entry.pushed_by = extents_.back().capture;
    entry.pushed_by_checkpoint = !extents_.back().recompute;
  }
  state.stash.push_back(entry);
}

void InvariantChecker::save_for_restore(ModuleId m) {
  ModuleState& state = module(m);
  state.saved_for_restore = state.numerics.forward;
  for (auto it = extents_.rbegin(); it != extents_.rend(); ++it) {
    if (it->recompute) {
      it->before_pop.emplace(m, state.numerics.forward);  // keeps the first
      break;
    }
  }
}

void InvariantChecker::pop_stash(ModuleId m) {
  ModuleState& state = module(m);
  const StashEntry entry = state.stash.front();
  state.stash.pop_front();
  const Extent* recompute = nullptr;
  for (auto it = extents_.rbegin(); it != extents_.rend() && recompute == nullptr; ++it) {
    if (it->recompute) recompute = &*it;
  }
  const bool paired = entry.pushed_by_checkpoint && recompute != nullptr &&
                      entry.pushed_by == recompute->capture && entry.step == step_;
  if (!paired) {
    violate(Invariant::I4, "module #" + std::to_string(m) +
                               " popped a stash entry that its own checkpoint's recompute in this step did not push");
  }
  state.numerics.forward = entry.value;
}

void InvariantChecker::stash_for(ModuleId m, CaptureId c) {
  checkpoint_stash_[c].emplace_back(m, module(m).numerics.forward);
}

void InvariantChecker::replay_stash(ModuleId m, CaptureId c, unsigned occurrence) {
  const Extent* recompute = nullptr;
  for (auto it = extents_.rbegin(); it != extents_.rend() && recompute == nullptr; ++it) {
    if (it->recompute) recompute = &*it;
  }
  if (recompute == nullptr || recompute->capture != c) {
    violate(Invariant::I4, "module #" + std::to_string(m) + " replayed a stash entry outside its own checkpoint's recompute");
  }
  unsigned seen = 0;
  for (const auto& [stashed, value] : checkpoint_stash_[c]) {
    if (stashed == m && seen++ == occurrence) {
      module(m).numerics.forward = value;
      return;
    }
  }
  violate(Invariant::I4, "module #" + std::to_string(m) + " replayed a stash entry its checkpoint never kept");
}

void InvariantChecker::release_stash(CaptureId c) {
  checkpoint_stash_.erase(c);
  dropped_.erase(c);
}

void InvariantChecker::checkpoint_dropped(CaptureId c) { dropped_.insert(c); }

void InvariantChecker::restore(ModuleId m) {
  ModuleState& state = module(m);
  state.numerics.forward = state.saved_for_restore;
}

}  // namespace fp8sm::explorer
