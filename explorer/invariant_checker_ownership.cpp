// The checker, I3: ownership scopes (an outermost autocast, a recompute) and their owners, and
// what every event tells the other checks (failed pops for I4, the program's grad mode, upstream's FIFO).
#include "explorer/invariant_checker.hpp"

#include <algorithm>
#include <string>
#include <utility>

namespace fp8sm::explorer {

using spec::Invariant;

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
  if (raised && pops && (raised->kind == spec::ExceptionKind::KeyError || raised->kind == spec::ExceptionKind::IndexError)) {
    violate(Invariant::I4, std::string("a pop found nothing to pop (") + spec::name(raised->kind) + ": " + raised->message + ")");
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

// ---- I3: owners -------------------------------------------------------------------------------

void InvariantChecker::node_recorded(NodeId node, ModuleId /*m*/, bool owner, bool live) {
  if (node >= node_live_.size()) node_live_.resize(node + 1u, true);
  node_live_[node] = live;
  if (owner && live && !scopes_.empty()) scopes_.back().owners.push_back(node);
}

void InvariantChecker::node_discarded(NodeId node) {
  if (node < node_live_.size()) node_live_[node] = false;
}

}  // namespace fp8sm::explorer
