// I3's observer: per ownership scope (an outermost user autocast, a recompute) at most one
// live owner; the bit only goes true -> false inside a scope; a scope's exit leaves the bit no
// higher than at its entry. Liveness is known at the step's end (a `try` may discard owners
// recorded earlier), so closed scopes and revivals are judged then.
#pragma once

#include <optional>

#include "explorer/model/observer_context.hpp"
#include "explorer/model/observer_state.hpp"
#include "spec/events.hpp"
#include "spec/step_result.hpp"
#include "statemachine/observer.hpp"

namespace fp8sm::explorer {

template <class S>
class OwnershipScopes {
 public:
  void bind(OwnershipState<S>& state) { state_ = &state; }

  void event_fired(const ObserverContext<S>& ctx, const spec::AnyEvent& event,
                   const std::optional<spec::RaisedException>& raised);
  void node_recorded(statemachine::NodeId node, bool owner, bool live);
  void node_discarded(statemachine::NodeId node);
  void step_end(const ObserverContext<S>& ctx);

 private:
  OwnershipState<S>* state_ = nullptr;
};

// Leaves out of `state` what can no longer violate I3, so that a step of any length holds
// finitely many scopes (the search's Abstractions::settled_ownership): owners no longer live
// (liveness only goes from true to false, and only live owners count); closed scopes with at
// most one live owner (a closed scope gains no owner, so it can never hold two); revivals with
// none; and of equal closed scopes or revivals all but one (they lose owners together and are
// judged alike at the step's end). Returns whether it left anything out.
template <class S>
bool forget_what_cannot_violate(OwnershipState<S>& state);

}  // namespace fp8sm::explorer
