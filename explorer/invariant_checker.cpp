#include "explorer/invariant_checker.hpp"

#include "statemachine/encoder.hpp"

#include <algorithm>
#include <string>
#include <utility>

namespace fp8sm::explorer {

using spec::Invariant;
using statemachine::CheckpointPhase;

void InvariantChecker::violate(Invariant invariant, std::string reason) {
  if (!verdict_.violations.contains(invariant)) verdict_.first_reason[invariant] = std::move(reason);
  verdict_.violations.add(invariant);
}

InvariantChecker::ModuleState& InvariantChecker::module(ModuleId m) {
  if (m >= modules_.size()) modules_.resize(m + 1u);
  return modules_[m];
}

StepVerdict InvariantChecker::take_current() {
  StepVerdict taken;
  taken.violations = std::exchange(verdict_.violations, spec::InvariantSet{});
  taken.first_reason = std::exchange(verdict_.first_reason, {});
  return taken;
}

namespace {
void encode_meta(statemachine::Encoder& out, const SymbolicMeta& m) {
  statemachine::put(out, m.history, 8);
  statemachine::put(out, m.current, 8);
  statemachine::put(out, m.current_from_recompute, 1);
  statemachine::put(out, static_cast<std::uint32_t>(m.current_oldest_step), 4);
}
}  // namespace

InvariantChecker::Carried InvariantChecker::carried_for(const spec::InvariantSet& checks) {
  Carried carried;
  carried.owners = checks.contains(Invariant::I3);
  carried.numerics_and_stashes = checks.contains(Invariant::I4) || checks.contains(Invariant::I5) ||
                                 checks.contains(Invariant::I8) || checks.contains(Invariant::I9);
  carried.program_grad = checks.contains(Invariant::I1);
  return carried;
}

void InvariantChecker::encode(statemachine::Encoder& out, Carried carried) const {
  using statemachine::IdKind;
  using statemachine::put;
  auto encode_scope = [&](const OwnershipScope& scope) {
    put(out, scope.recompute | (scope.bit_at_entry << 1), 1);
    put(out, scope.owners.size(), 2);
    for (NodeId n : scope.owners) {
      out.put_id(IdKind::Node, n);
      put(out, n < node_live_.size() && node_live_[n], 1);
    }
  };
  if (carried.program_grad) {
    put(out, program_grad_.size(), 2);
    for (bool grad : program_grad_) put(out, grad, 1);
  }
  if (carried.owners) {
    put(out, bit_before_event_, 1);
    put(out, scopes_.size(), 2);
    for (const OwnershipScope& scope : scopes_) encode_scope(scope);
    put(out, closed_scopes_.size(), 2);
    for (const OwnershipScope& scope : closed_scopes_) encode_scope(scope);
    put(out, revivals_.size(), 2);
    for (const Revival& r : revivals_) encode_scope(OwnershipScope{false, false, r.owners});
  }
  if (!carried.numerics_and_stashes) return;
  put(out, static_cast<std::uint32_t>(fifo_length_), 4);
  put(out, static_cast<std::uint32_t>(step_), 4);
  put(out, modules_.size(), 2);
  for (const ModuleState& m : modules_) {
    encode_meta(out, m.numerics.forward);
    encode_meta(out, m.numerics.backward);
    encode_meta(out, m.saved_for_restore);
    put(out, m.registered, 1);
    put(out, m.stash.size(), 2);
    for (const StashEntry& e : m.stash) {
      encode_meta(out, e.value);
      if (e.pushed_by_checkpoint) {
        out.put_id(IdKind::Capture, e.pushed_by);
      } else {
        out.put_no_id();
      }
      put(out, static_cast<std::uint32_t>(e.step), 4);
    }
  }
  put(out, extents_.size(), 2);
  for (const Extent& e : extents_) {
    out.put_id(IdKind::Capture, e.capture);
    put(out, e.recompute, 1);
    put(out, e.occurrences.size(), 2);
    for (const auto& [m, k] : e.occurrences) {
      put(out, m, 2);
      put(out, static_cast<std::uint32_t>(k), 4);
    }
    put(out, e.before_pop.size(), 2);
    for (const auto& [m, meta] : e.before_pop) {
      put(out, m, 2);
      encode_meta(out, meta);
    }
  }
  for (const auto& [capture, seen] : original_seen_) {
    out.begin_keyed(IdKind::Capture, capture);
    put(out, 3, 1);  // what the original forward of `capture` saw
    put(out, seen.size(), 2);
    for (const auto& [m, histories] : seen) {
      put(out, m, 2);
      put(out, histories.size(), 2);
      for (std::uint64_t h : histories) put(out, h, 8);
    }
    out.end_keyed();
  }
  if (installed_from_) {
    out.put_id(IdKind::Capture, *installed_from_);
  } else {
    out.put_no_id();
  }
  for (const auto& [capture, entries] : checkpoint_stash_) {
    out.begin_keyed(IdKind::Capture, capture);
    put(out, 4, 1);  // the stash kept for `capture`
    put(out, entries.size(), 2);
    for (const auto& [m, meta] : entries) {
      put(out, m, 2);
      encode_meta(out, meta);
    }
    out.end_keyed();
  }
  for (CaptureId c : dropped_) {
    out.begin_keyed(IdKind::Capture, c);
    put(out, 5, 1);  // dropped by the interpreter
    out.end_keyed();
  }
}

// ---- steps and top level ---------------------------------------------------------------------

void InvariantChecker::step_begin(int step) {
  step_ = step;
  verdict_ = StepVerdict{};
}

void InvariantChecker::step_end(int /*step*/) {
  // I3, judged now that we know which owners a `try` discarded.
  for (const OwnershipScope& scope : closed_scopes_) {
    const auto live = std::count_if(scope.owners.begin(), scope.owners.end(),
                                    [&](NodeId n) { return node_live_[n]; });
    if (live > 1) {
      violate(Invariant::I3, std::to_string(live) + " live owners of the backward update in one " +
                                 (scope.recompute ? "recompute" : "outermost autocast"));
    }
  }
  for (const Revival& revival : revivals_) {
    if (std::any_of(revival.owners.begin(), revival.owners.end(), [&](NodeId n) { return node_live_[n]; })) {
      violate(Invariant::I3, "ownership revived inside a scope whose owner is still live");
    }
  }
  closed_scopes_.clear();
  revivals_.clear();
  // I4: nothing left over.
  for (std::size_t m = 0; m < modules_.size(); ++m) {
    if (!modules_[m].stash.empty()) {
      violate(Invariant::I4, "module #" + std::to_string(m) + " ends the step with " +
                                 std::to_string(modules_[m].stash.size()) + " stash entries never popped");
    }
  }
  for (const auto& [capture, entries] : checkpoint_stash_) {
    if (dropped_.count(capture) != 0 && !entries.empty()) {
      violate(Invariant::I4, "a checkpoint that can never be recomputed again keeps " +
                                 std::to_string(entries.size()) + " stash entries");
    }
  }
  if (fifo_length_ != 0) {
    violate(Invariant::I4, "the captured-bit FIFO ends the step with " + std::to_string(fifo_length_) + " entries");
  }
  // I7
  if (machine_->autocast_depth() != 0) violate(Invariant::I7, "autocast depth is not 0 at step end");
  for (const ModuleState& m : modules_) verdict_.numerics.push_back(m.numerics);
  verdicts_.push_back(std::move(verdict_));
  verdict_ = StepVerdict{};
}

void InvariantChecker::top_level_statement_done() {
  if (machine_->checkpoint_phase() != CheckpointPhase::Outside) {
    violate(Invariant::I6, "the checkpoint region/phase flags stay set after a top-level statement");
  }
  if (machine_->fp8_enabled()) violate(Invariant::I6, "fp8_enabled stays set outside every autocast");
  if (machine_->autocast_depth() == 0 && bit()) {
    violate(Invariant::I6, "the ownership bit is left set outside any autocast (soft form)");
  }
}

// ---- every event: I3 ownership scopes and revivals, I4 failed pops --------------------------

void InvariantChecker::event_fired(const spec::AnyEvent& event,
                                   const std::optional<spec::RaisedException>& raised) {
  const bool before = bit_before_event_;
  const bool after = bit();
  bit_before_event_ = after;

  // The program's grad mode: its own pushes set it; a checkpoint's or the backward engine's
  // (internal) keep it; a pop restores what the push found.
  if (const auto* push = std::get_if<spec::GradPush>(&event)) {
    if (!raised) {
      const bool current = program_grad_.back();
      program_grad_.push_back(push->internal ? current : push->enabled);
    }
  } else if (std::holds_alternative<spec::GradPop>(event)) {
    if (!raised && program_grad_.size() > 1) program_grad_.pop_back();
  }
  // Upstream's FIFO (spec §2.1): every checkpoint forward's entry appends its bit, every
  // recompute's entry takes the oldest.
  if (machine_->semantics() == spec::Semantics::Upstream && !raised) {
    if (std::holds_alternative<spec::CheckpointForwardEnter>(event)) ++fifo_length_;
    if (std::holds_alternative<spec::RecomputeEnter>(event) && fifo_length_ > 0) --fifo_length_;
  }

  // A stash pop, a restore or a FIFO pop that found nothing (not a saved-tensor unpack).
  const bool pops = std::holds_alternative<spec::ModulePrepare>(event) ||
                    std::holds_alternative<spec::ModuleEndForward>(event) ||
                    std::holds_alternative<spec::RecomputeEnter>(event);
  if (raised && pops && (raised->kind == "KeyError" || raised->kind == "IndexError")) {
    violate(Invariant::I4, "a pop found nothing to pop (" + raised->kind + ": " + raised->message + ")");
  }

  const auto* enter = std::get_if<spec::AutocastEnter>(&event);
  const bool opens_outermost_autocast =
      enter != nullptr && !enter->recompute_internal && machine_->autocast_depth() == 1;
  const bool enters_recompute = std::holds_alternative<spec::RecomputeEnter>(event) && !raised;

  const bool closes_autocast_scope = std::holds_alternative<spec::AutocastExit>(event) &&
                                     machine_->autocast_depth() == 0 && !scopes_.empty() &&
                                     !scopes_.back().recompute;
  const bool closes_recompute_scope =
      std::holds_alternative<spec::RecomputeExit>(event) && !scopes_.empty() && scopes_.back().recompute;
  if (closes_autocast_scope || closes_recompute_scope) {
    OwnershipScope scope = std::move(scopes_.back());
    scopes_.pop_back();
    if (after && !scope.bit_at_entry) {
      violate(Invariant::I3, std::string("the ownership bit leaves a ") +
                                 (scope.recompute ? "recompute" : "outermost autocast") +
                                 " true where it entered false");
    }
    closed_scopes_.push_back(std::move(scope));
  } else if (opens_outermost_autocast) {
    scopes_.push_back(OwnershipScope{false, before, {}});
  } else if (enters_recompute) {
    scopes_.push_back(OwnershipScope{true, before, {}});
  } else if (!before && after && !scopes_.empty() && !scopes_.back().owners.empty()) {
    // A rise at a scope's own entry or exit is not a revival inside it (an exit that raises
    // the bit above its entry value is judged above).
    revivals_.push_back(Revival{scopes_.back().owners});
  }
}

// ---- I1: forward updates ----------------------------------------------------------------------

void InvariantChecker::autocast_exit_begin(bool user) {
  in_exit_ = true;
  exit_updates_ = 0;
  // Grad as the program sets it: a reentrant checkpoint's no-grad forward is the checkpoint's
  // business, and the same program without the checkpoint would update here.
  exit_expects_update_ = user && machine_->autocast_depth() == 1 && machine_->fp8_enabled() &&
                         program_grad_.back();
}

void InvariantChecker::autocast_exit_end() {
  if (exit_expects_update_ && exit_updates_ == 0) {
    violate(Invariant::I1, "an outermost enabled autocast exit with grad on made no forward update");
  }
  in_exit_ = false;
}

void InvariantChecker::forward_update() {
  if (!(in_exit_ && exit_expects_update_ && exit_updates_ == 0)) {
    violate(Invariant::I1, in_exit_ && exit_expects_update_
                               ? "a second forward update at one autocast exit"
                               : "a forward update outside an outermost user autocast exit "
                                 "(e.g. from a recompute)");
  }
  ++exit_updates_;
  for (std::size_t m = 0; m < modules_.size(); ++m) {
    ModuleState& state = modules_[m];
    SymbolicMeta& meta = state.numerics.forward;
    if (meta.current == 0) continue;
    if (!state.registered) {
      violate(Invariant::I9, "module #" + std::to_string(m) + " cast in FP8 but is not registered");
      continue;
    }
    if (meta.current_from_recompute) violate(Invariant::I5, "a forward update folds an amax produced by a recompute");
    if (meta.current_oldest_step < step_) violate(Invariant::I5, "a forward update folds an amax from an earlier step");
    meta.fold();
  }
}

void InvariantChecker::discard_forward_amax() {
  for (ModuleState& state : modules_) state.numerics.forward.discard_current();
}

// ---- I2: backward passes ----------------------------------------------------------------------

void InvariantChecker::backward_pass_begin() {
  in_pass_ = true;
  pass_fp8_backwards_ = 0;
  pass_updates_ = 0;
}

void InvariantChecker::module_backward(ModuleId m, bool fp8) {
  if (!fp8) return;
  ++pass_fp8_backwards_;
  if (pass_updates_ > 0) violate(Invariant::I2, "an FP8 module backward runs after the pass's backward update");
  SymbolicMeta& meta = module(m).numerics.backward;
  meta.accumulate(amax_tag(m, step_, meta.history, true), false, step_);
}

void InvariantChecker::backward_update() {
  ++pass_updates_;
  if (pass_updates_ == 2) violate(Invariant::I2, "more than one backward update in one backward pass");
  for (ModuleState& state : modules_) {
    if (state.registered) state.numerics.backward.fold();
  }
}

void InvariantChecker::backward_pass_end(bool completed) {
  if (completed && pass_fp8_backwards_ > 0 && pass_updates_ == 0) {
    violate(Invariant::I2, "a backward pass ran FP8 module backwards but made no backward update");
  }
  in_pass_ = false;
}

// ---- I3: owners -------------------------------------------------------------------------------

void InvariantChecker::node_recorded(NodeId node, ModuleId /*m*/, bool owner, bool live) {
  if (node >= node_live_.size()) node_live_.resize(node + 1u, true);
  node_live_[node] = live;
  if (owner && live && !scopes_.empty()) scopes_.back().owners.push_back(node);
}

void InvariantChecker::node_discarded(NodeId node) {
  if (node < node_live_.size()) node_live_[node] = false;
}

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
