#include "explorer/model/checkpoint_numerics.hpp"

#include <algorithm>
#include <cstdint>
#include <utility>

namespace fp8sm::explorer {

using spec::Invariant;
using statemachine::to_id;

namespace {

// Sorted insertion into a list used as a set; returns whether `value` was new.
template <class List, class Value>
bool insert_sorted(List& list, const Value& value) {
  auto at = std::lower_bound(list.begin(), list.end(), value);
  if (at != list.end() && *at == value) return false;
  list.insert(at, value);
  return true;
}
template <class List, class Value>
void erase_sorted(List& list, const Value& value) {
  auto at = std::lower_bound(list.begin(), list.end(), value);
  if (at != list.end() && *at == value) list.erase(at);
}

}  // namespace

template <class S>
typename NumericsState<S>::Module& CheckpointNumerics<S>::module(ModuleId m) {
  if (m >= state_->modules.size()) state_->modules.resize(m + 1u);
  return state_->modules[m];
}

template <class S>
int CheckpointNumerics<S>::innermost_recompute() const {
  for (std::size_t i = state_->extents.size(); i-- > 0;) {
    if (state_->extents[i].recompute) return static_cast<int>(i);
  }
  return -1;
}

// ---- every event: upstream's FIFO, failed pops -----------------------------------------------

template <class S>
void CheckpointNumerics<S>::event_fired(const ObserverContext<S>& ctx, const spec::AnyEvent& event,
                                        const std::optional<spec::RaisedException>& raised) {
  // Upstream's FIFO (spec §2.1): every checkpoint forward's entry appends its bit, every
  // recompute's entry takes the oldest. Counted here from the events on purpose, not read from
  // the machine's FIFO (MachineData::fifo): I4 judges what the table does with it, and a count
  // read from the table would agree with any row that forgot a push or a pop, hiding the very
  // leftover I4 looks for. The observers judge from what they observe, never from the table's
  // data (invariant_checker.hpp).
  if (ctx.machine->semantics() == spec::Semantics::Upstream && !raised) {
    if (std::holds_alternative<spec::CheckpointForwardEnter>(event)) ++state_->fifo_length;
    if (std::holds_alternative<spec::RecomputeEnter>(event) && state_->fifo_length > 0) --state_->fifo_length;
  }
  // A stash pop, a restore or a FIFO pop that found nothing (not a saved-tensor unpack).
  const bool pops = std::holds_alternative<spec::ModulePrepare>(event) ||
                    std::holds_alternative<spec::ModuleEndForward>(event) ||
                    std::holds_alternative<spec::RecomputeEnter>(event);
  if (raised && pops &&
      (raised->kind == spec::ExceptionKind::KeyError || raised->kind == spec::ExceptionKind::IndexError)) {
    ctx.violate(Invariant::I4, Reason::PopFoundNothing, static_cast<std::uint64_t>(raised->kind), 0, 0, 0,
                raised->message);
  }
}

// ---- the step's end: I4, nothing left over ---------------------------------------------------

template <class S>
void CheckpointNumerics<S>::step_end(const ObserverContext<S>& ctx) {
  State& st = *state_;
  for (std::size_t m = 0; m < st.modules.size(); ++m) {
    std::size_t entries = 0;
    if constexpr (S::kFlat) {
      entries = static_cast<std::size_t>(
          std::count_if(st.stash.begin(), st.stash.end(), [&](const auto& e) { return e.module == m; }));
    } else {
      entries = st.stash.group(to_id<S>(m)).size();
    }
    if (entries != 0) ctx.violate(Invariant::I4, Reason::StashLeftAtStepEnd, m, std::uint64_t{entries});
  }
  for (Id capture : st.kept_by) {
    if (!std::binary_search(st.dropped.begin(), st.dropped.end(), capture)) continue;
    std::size_t entries = 0;
    if constexpr (S::kFlat) {
      entries = static_cast<std::size_t>(
          std::count_if(st.kept.begin(), st.kept.end(), [&](const auto& k) { return k.capture == capture; }));
    } else {
      for (std::size_t m = 0; m < st.modules.size(); ++m) {
        entries += st.kept.group(State::capture_module_key(capture, to_id<S>(m))).size();
      }
    }
    if (entries != 0) ctx.violate(Invariant::I4, Reason::KeptStashOfDroppedCheckpoint, std::uint64_t{entries});
  }
  if (st.fifo_length != 0) {
    ctx.violate(Invariant::I4, Reason::FifoLeftAtStepEnd, static_cast<std::uint64_t>(st.fifo_length));
  }
}

// ---- updates: I5 and I9 at the forward update ------------------------------------------------

template <class S>
void CheckpointNumerics<S>::forward_update(const ObserverContext<S>& ctx) {
  State& st = *state_;
  for (std::size_t m = 0; m < st.modules.size(); ++m) {
    auto& record = st.modules[m];
    SymbolicMeta& meta = record.forward;
    if (meta.current == 0) continue;
    if (!record.registered) {
      ctx.violate(Invariant::I9, Reason::CastButNotRegistered, m);
      continue;
    }
    if (meta.current_from_recompute) ctx.violate(Invariant::I5, Reason::FoldsRecomputeAmax);
    if (meta.current_oldest_step < st.step) ctx.violate(Invariant::I5, Reason::FoldsEarlierStepAmax);
    meta.fold();
  }
}

template <class S>
void CheckpointNumerics<S>::discard_forward_amax() {
  for (auto& record : state_->modules) record.forward.discard_current();
}

template <class S>
void CheckpointNumerics<S>::module_backward(ModuleId m, bool fp8) {
  if (!fp8) return;
  SymbolicMeta& meta = module(m).backward;
  meta.accumulate(amax_tag(m, state_->step, meta.history, true), false, state_->step);
}

template <class S>
void CheckpointNumerics<S>::backward_update() {
  for (auto& record : state_->modules) {
    if (record.registered) record.backward.fold();
  }
}

// ---- extents ----------------------------------------------------------------------------------

template <class S>
void CheckpointNumerics<S>::checkpoint_forward_begin(CaptureId c) {
  state_->extents.push_back(typename State::Extent{to_id<S>(c), false});
}

template <class S>
void CheckpointNumerics<S>::checkpoint_forward_end() {
  state_->extents.pop_back();
}

template <class S>
void CheckpointNumerics<S>::recompute_begin(const ObserverContext<S>& ctx, CaptureId c) {
  State& st = *state_;
  if (st.installed_from != State::kNone && st.installed_from != c) {
    ctx.violate(Invariant::I4, Reason::BitFromAnotherCheckpoint);
  }
  st.installed_from = State::kNone;
  st.extents.push_back(typename State::Extent{to_id<S>(c), true});
}

template <class S>
void CheckpointNumerics<S>::recompute_end(const ObserverContext<S>& ctx) {
  State& st = *state_;
  const auto top = static_cast<Id>(st.extents.size() - 1);
  for (const auto& before : st.before_pop) {
    if (before.extent == top && module(static_cast<ModuleId>(before.module)).forward != before.meta) {
      ctx.violate(Invariant::I5, Reason::RecomputeChangesScaling, before.module);
    }
  }
  // What the recompute counted goes with it.
  auto of_top = [&](const auto& entry) { return entry.extent == top; };
  st.occurrences.erase(std::remove_if(st.occurrences.begin(), st.occurrences.end(), of_top), st.occurrences.end());
  st.before_pop.erase(std::remove_if(st.before_pop.begin(), st.before_pop.end(), of_top), st.before_pop.end());
  st.extents.pop_back();
}

template <class S>
void CheckpointNumerics<S>::ownership_installed(CaptureId c) {
  state_->installed_from = to_id<S>(c);
}

// ---- casts: what an original forward saw, what its recompute sees ----------------------------

template <class S>
void CheckpointNumerics<S>::module_computed(const ObserverContext<S>& ctx, ModuleId m, bool recompute) {
  if (!ctx.machine->module(m).fp8) return;  // no FP8 cast, nothing read or accumulated
  State& st = *state_;
  SymbolicMeta& meta = module(m).forward;
  const Id module_id = to_id<S>(m);
  // `seen` is grouped by (capture, module), each key's histories in the order seen: a key's
  // k-th history is k after its first, found by binary search (nested checkpoints make these
  // lists long: every checkpoint around a module sees it). The original extents' histories are
  // added together after the loop (storage.hpp, insert_grouped); the recompute extents read
  // other checkpoints' keys, so they do not see the difference.
  auto seen_key = [](const typename State::Seen& x) { return State::capture_module_key(x.capture, x.module); };
  constexpr std::size_t kBatch = 64;
  typename State::Seen added[kBatch];
  std::size_t n = 0;
  for (std::size_t e = 0; e < st.extents.size(); ++e) {
    const typename State::Extent extent = st.extents[e];
    const typename State::Seen key{meta.history, extent.capture, module_id};
    insert_sorted(st.seen_keys, typename State::SeenKey{extent.capture, module_id});
    if (!extent.recompute) {
      if (n == kBatch) statemachine::insert_grouped(st.seen, added, std::exchange(n, 0), seen_key);
      added[n++] = key;
      continue;
    }
    // This recompute's k-th computation of m against the original's k-th.
    const Id at = static_cast<Id>(e);
    const typename State::Occurrence probe{at, module_id, 0};
    auto occurrence = std::lower_bound(st.occurrences.begin(), st.occurrences.end(), probe, [](const auto& a, const auto& b) {
      return a.extent != b.extent ? a.extent < b.extent : a.module < b.module;
    });
    if (occurrence == st.occurrences.end() || occurrence->extent != at || occurrence->module != module_id) {
      occurrence = st.occurrences.insert(occurrence, probe);
    }
    const std::size_t k = occurrence->count++;
    const auto [first, last] = statemachine::group_of(st.seen, seen_key(key), seen_key);
    if (k < static_cast<std::size_t>(last - first) && first[static_cast<std::ptrdiff_t>(k)].history != meta.history) {
      ctx.violate(Invariant::I5, Reason::RecomputeSeesOtherScaling, m);
    }
  }
  statemachine::insert_grouped(st.seen, added, n, seen_key);
  meta.accumulate(amax_tag(m, st.step, meta.history, false), recompute, st.step);
}

template <class S>
void CheckpointNumerics<S>::registered(const ObserverContext<S>& ctx, ModuleId m) {
  auto& record = module(m);
  if (record.registered) ctx.violate(Invariant::I9, Reason::RegisteredTwice, m);
  if (innermost_recompute() >= 0) ctx.violate(Invariant::I9, Reason::RegisteredInRecompute, m);
  record.registered = true;
}

// ---- the modules' deques (upstream, pr3213) --------------------------------------------------

template <class S>
void CheckpointNumerics<S>::stash(ModuleId m) {
  State& st = *state_;
  typename State::StashEntry entry;
  entry.value = module(m).forward;
  entry.step = st.step;
  entry.module = to_id<S>(m);
  if (!st.extents.empty() && !st.extents.back().recompute) entry.pushed_by = st.extents.back().capture;
  if constexpr (S::kFlat) {
    st.stash.push_back(entry);
  } else {
    st.stash.push_back(entry.module, entry);
  }
}

template <class S>
void CheckpointNumerics<S>::save_for_restore(ModuleId m) {
  State& st = *state_;
  auto& record = module(m);
  record.saved_for_restore = record.forward;
  const int recompute = innermost_recompute();
  if (recompute < 0) return;
  const auto extent = static_cast<Id>(recompute);
  const Id module_id = to_id<S>(m);
  const auto at = std::find_if(st.before_pop.begin(), st.before_pop.end(), [&](const auto& b) {
    return b.extent > extent || (b.extent == extent && b.module >= module_id);
  });
  if (at != st.before_pop.end() && at->extent == extent && at->module == module_id) return;  // keeps the first
  st.before_pop.insert(at, typename State::BeforePop{record.forward, extent, module_id});
}

template <class S>
void CheckpointNumerics<S>::pop_stash(const ObserverContext<S>& ctx, ModuleId m) {
  State& st = *state_;
  typename State::StashEntry entry;  // the module's oldest entry
  if constexpr (S::kFlat) {
    const auto at = std::find_if(st.stash.begin(), st.stash.end(), [&](const auto& e) { return e.module == m; });
    entry = *at;
    st.stash.erase(at);
  } else {
    entry = st.stash.group(to_id<S>(m)).front();
    st.stash.pop_front(to_id<S>(m));
  }
  const int recompute = innermost_recompute();
  const bool paired = entry.pushed_by != State::kNone && recompute >= 0 &&
                      entry.pushed_by == st.extents[static_cast<std::size_t>(recompute)].capture &&
                      entry.step == st.step;
  if (!paired) ctx.violate(Invariant::I4, Reason::UnpairedStashPop, m);
  module(m).forward = entry.value;
}

template <class S>
void CheckpointNumerics<S>::restore(ModuleId m) {
  auto& record = module(m);
  record.forward = record.saved_for_restore;
}

// ---- each checkpoint's kept stash (fp8sm) ----------------------------------------------------

template <class S>
void CheckpointNumerics<S>::stash_for(ModuleId m, CaptureId c) {
  State& st = *state_;
  insert_sorted(st.kept_by, to_id<S>(c));
  const typename State::Kept kept{module(m).forward, to_id<S>(c), to_id<S>(m)};
  if constexpr (S::kFlat) {
    st.kept.push_back(kept);
  } else {
    st.kept.push_back(State::capture_module_key(kept.capture, kept.module), kept);
  }
}

template <class S>
void CheckpointNumerics<S>::replay_stash(const ObserverContext<S>& ctx, ModuleId m, CaptureId c, unsigned occurrence) {
  State& st = *state_;
  const int recompute = innermost_recompute();
  if (recompute < 0 || st.extents[static_cast<std::size_t>(recompute)].capture != c) {
    ctx.violate(Invariant::I4, Reason::ReplayOutsideRecompute, m);
  }
  insert_sorted(st.kept_by, to_id<S>(c));  // looking a checkpoint up gives it an (empty) stash
  const typename State::Kept* found = nullptr;  // the module's occurrence-th kept entry
  if constexpr (S::kFlat) {
    unsigned seen = 0;
    for (const auto& kept : st.kept) {
      if (kept.capture == c && kept.module == m && seen++ == occurrence) {
        found = &kept;
        break;
      }
    }
  } else {
    const auto& of_module = st.kept.group(State::capture_module_key(to_id<S>(c), to_id<S>(m)));
    if (occurrence < of_module.size()) found = &of_module[occurrence];
  }
  if (found == nullptr) {
    ctx.violate(Invariant::I4, Reason::ReplayNeverKept, m);
    return;
  }
  module(m).forward = found->meta;
}

template <class S>
void CheckpointNumerics<S>::release_stash(CaptureId c) {
  State& st = *state_;
  erase_sorted(st.kept_by, c);
  if constexpr (S::kFlat) {
    st.kept.erase(std::remove_if(st.kept.begin(), st.kept.end(), [&](const auto& k) { return k.capture == c; }),
                  st.kept.end());
  } else {
    for (std::size_t m = 0; m < st.modules.size(); ++m) {
      st.kept.erase(State::capture_module_key(to_id<S>(c), to_id<S>(m)));
    }
  }
  erase_sorted(st.dropped, c);
}

template <class S>
void CheckpointNumerics<S>::checkpoint_dropped(CaptureId c) {
  insert_sorted(state_->dropped, to_id<S>(c));
}

template class CheckpointNumerics<statemachine::GrowableStorage>;
template class CheckpointNumerics<statemachine::FlatStorage>;

}  // namespace fp8sm::explorer
