// The checker's core: verdicts, what it carries between statements and its encoding, and the
// checks at a step's end and after a top-level statement (I3 judged, I4 leftovers, I6, I7).
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

}  // namespace fp8sm::explorer
