#include "explorer/model/ownership_scopes.hpp"

#include <algorithm>

namespace fp8sm::explorer {

using spec::Invariant;

template <class S>
void OwnershipScopes<S>::event_fired(const ObserverContext<S>& ctx, const spec::AnyEvent& event,
                                     const std::optional<spec::RaisedException>& raised) {
  using Scope = typename OwnershipState<S>::Scope;
  OwnershipState<S>& st = *state_;
  const bool before = st.bit_before_event;
  const bool after = ctx.machine->ownership_available();
  st.bit_before_event = after;

  const auto* enter = std::get_if<spec::AutocastEnter>(&event);
  const bool opens_outermost_autocast =
      enter != nullptr && !enter->recompute_internal && ctx.machine->autocast_depth() == 1;
  const bool enters_recompute = std::holds_alternative<spec::RecomputeEnter>(event) && !raised;
  const bool closes_autocast_scope = std::holds_alternative<spec::AutocastExit>(event) &&
                                     ctx.machine->autocast_depth() == 0 && !st.open.empty() &&
                                     !st.open.back().recompute;
  const bool closes_recompute_scope =
      std::holds_alternative<spec::RecomputeExit>(event) && !st.open.empty() && st.open.back().recompute;
  if (closes_autocast_scope || closes_recompute_scope) {
    const Scope scope = st.open.back();
    st.open.pop_back();
    if (after && !scope.bit_at_entry) ctx.violate(Invariant::I3, Reason::BitLeavesScopeTrue, 0, scope.recompute);
    st.closed.push_back(scope);
  } else if (opens_outermost_autocast || enters_recompute) {
    Scope scope;
    scope.recompute = enters_recompute;
    scope.bit_at_entry = before;
    st.open.push_back(scope);
  } else if (!before && after && !st.open.empty() && !st.open.back().owners.empty()) {
    // A rise at a scope's own entry or exit is not a revival inside it (an exit that raises
    // the bit above its entry value is judged above).
    Scope revival;
    revival.owners = st.open.back().owners;
    st.revivals.push_back(revival);
  }
}

template <class S>
void OwnershipScopes<S>::node_recorded(statemachine::NodeId node, bool owner, bool live) {
  OwnershipState<S>& st = *state_;
  if (owner && live && !st.open.empty()) {
    st.open.back().owners.push_back(typename OwnershipState<S>::Owner{statemachine::to_id<S>(node), true});
  }
}

// A node is one owner in every list that names it (a scope, and the revivals copied from it).
template <class S>
void OwnershipScopes<S>::node_discarded(statemachine::NodeId node) {
  OwnershipState<S>& st = *state_;
  auto forget = [&](auto& scopes) {
    for (auto& scope : scopes) {
      for (auto& owner : scope.owners) {
        if (owner.node == node) owner.live = false;
      }
    }
  };
  forget(st.open);
  forget(st.closed);
  forget(st.revivals);
}

template <class S>
void OwnershipScopes<S>::step_end(const ObserverContext<S>& ctx) {
  OwnershipState<S>& st = *state_;
  auto live_owners = [](const auto& scope) {
    return std::count_if(scope.owners.begin(), scope.owners.end(), [](const auto& o) { return o.live; });
  };
  for (const auto& scope : st.closed) {
    const auto live = live_owners(scope);
    if (live > 1) ctx.violate(Invariant::I3, Reason::LiveOwners, static_cast<std::uint64_t>(live), scope.recompute);
  }
  for (const auto& revival : st.revivals) {
    if (live_owners(revival) > 0) ctx.violate(Invariant::I3, Reason::OwnershipRevived);
  }
  st.closed.clear();
  st.revivals.clear();
}

namespace {

template <class Scope>
bool same_scope(const Scope& a, const Scope& b) {
  if (a.recompute != b.recompute || a.bit_at_entry != b.bit_at_entry || a.owners.size() != b.owners.size()) return false;
  for (std::size_t i = 0; i < a.owners.size(); ++i) {
    if (a.owners[i].node != b.owners[i].node) return false;
  }
  return true;
}

// Drops the owners no longer live; true if it dropped any.
template <class Owners>
bool drop_dead(Owners& owners) {
  const auto live_end = std::remove_if(owners.begin(), owners.end(), [](const auto& o) { return !o.live; });
  if (live_end == owners.end()) return false;
  owners.erase(live_end, owners.end());
  return true;
}

// Drops each scope's owners no longer live, then the scopes with fewer than `least` owners left
// and the repeats of an earlier scope; true if it dropped anything.
template <class Scopes>
bool keep_what_can_violate(Scopes& scopes, std::size_t least) {
  bool dropped = false;
  std::size_t kept = 0;
  for (std::size_t i = 0; i < scopes.size(); ++i) {
    auto scope = scopes[i];
    dropped = drop_dead(scope.owners) || dropped;
    bool repeat = scope.owners.size() < least;
    for (std::size_t k = 0; k < kept && !repeat; ++k) repeat = same_scope(scopes[k], scope);
    if (!repeat) scopes[kept++] = scope;
  }
  dropped = dropped || kept < scopes.size();
  scopes.resize(kept);
  return dropped;
}

}  // namespace

template <class S>
bool forget_what_cannot_violate(OwnershipState<S>& state) {
  bool dropped = false;
  for (auto& scope : state.open) dropped = drop_dead(scope.owners) || dropped;
  dropped = keep_what_can_violate(state.closed, 2) || dropped;
  dropped = keep_what_can_violate(state.revivals, 1) || dropped;
  return dropped;
}

template bool forget_what_cannot_violate(OwnershipState<statemachine::GrowableStorage>&);
template bool forget_what_cannot_violate(OwnershipState<statemachine::FlatStorage>&);

template class OwnershipScopes<statemachine::GrowableStorage>;
template class OwnershipScopes<statemachine::FlatStorage>;

}  // namespace fp8sm::explorer
