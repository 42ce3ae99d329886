// The checker: which observers run, and every observation handed to those that need it.
#include "explorer/model/invariant_checker.hpp"

#include <utility>

namespace fp8sm::explorer {

using spec::Invariant;

CheckedObservers CheckedObservers::for_checks(const spec::InvariantSet& checks) {
  if (checks.empty()) return CheckedObservers{};
  CheckedObservers o;
  o.forward_updates = checks.contains(Invariant::I1);
  o.backward_passes = checks.contains(Invariant::I2);
  o.ownership = checks.contains(Invariant::I3);
  o.numerics = checks.contains(Invariant::I4) || checks.contains(Invariant::I5) || checks.contains(Invariant::I8) ||
               checks.contains(Invariant::I9);
  o.step_end = checks.contains(Invariant::I6) || checks.contains(Invariant::I7);
  return o;
}

template <class S>
ObserverState<S> InvariantChecker<S>::initial_state() {
  ObserverState<S> state;
  ForwardUpdates<S>::init(state.program_grad);
  return state;
}

template <class S>
InvariantChecker<S>::InvariantChecker() : own_(initial_state()), keep_steps_(true) {
  context_.verdict = &verdict_;
  bind(own_);
}

template <class S>
InvariantChecker<S>::InvariantChecker(ObserverState<S>& state, CheckedObservers observers) : observers_(observers) {
  context_.verdict = &verdict_;
  bind(state);
}

template <class S>
void InvariantChecker<S>::bind(ObserverState<S>& state) {
  forward_updates_.bind(state.program_grad);
  ownership_.bind(state.ownership);
  numerics_observer_.bind(state.numerics);
  numerics_ = &state.numerics;
}

// ---- steps and top level -----------------------------------------------------------------------

template <class S>
void InvariantChecker<S>::step_begin(int step) {
  if (observers_.numerics) numerics_observer_.step_begin(step);
}

template <class S>
void InvariantChecker<S>::step_end(int /*step*/) {
  if (observers_.ownership) ownership_.step_end(context_);
  if (observers_.numerics) numerics_observer_.step_end(context_);
  if (observers_.step_end) step_end_checks_.step_end(context_);
  if (!keep_steps_) return;
  StepVerdict step;
  step.violations = verdict_.violations();
  for (Invariant i : spec::kAllInvariants) {
    if (verdict_.contains(i)) step.first_reason[i] = verdict_.reason(i);
  }
  for (const auto& m : numerics_->modules) step.numerics.push_back(ModuleNumerics{m.forward, m.backward});
  verdicts_.push_back(std::move(step));
  verdict_.clear();
}

template <class S>
void InvariantChecker<S>::top_level_statement_done() {
  if (observers_.step_end) step_end_checks_.top_level_statement_done(context_);
}

// ---- events and extents ------------------------------------------------------------------------

template <class S>
void InvariantChecker<S>::event_fired(const spec::AnyEvent& event, const std::optional<spec::RaisedException>& raised) {
  if (observers_.forward_updates) forward_updates_.event_fired(event, raised);
  if (observers_.ownership) ownership_.event_fired(context_, event, raised);
  if (observers_.numerics) numerics_observer_.event_fired(context_, event, raised);
}

template <class S>
void InvariantChecker<S>::autocast_exit_begin(bool user) {
  if (observers_.forward_updates) forward_updates_.autocast_exit_begin(context_, user);
}

template <class S>
void InvariantChecker<S>::autocast_exit_end() {
  if (observers_.forward_updates) forward_updates_.autocast_exit_end(context_);
}

template <class S>
void InvariantChecker<S>::module_computed(ModuleId m, bool recompute) {
  if (observers_.numerics) numerics_observer_.module_computed(context_, m, recompute);
}

template <class S>
void InvariantChecker<S>::node_recorded(NodeId node, ModuleId /*m*/, bool owner, bool live) {
  if (observers_.ownership) ownership_.node_recorded(node, owner, live);
}

template <class S>
void InvariantChecker<S>::node_discarded(NodeId node) {
  if (observers_.ownership) ownership_.node_discarded(node);
}

template <class S>
void InvariantChecker<S>::backward_pass_begin() {
  if (observers_.backward_passes) backward_passes_.backward_pass_begin();
}

template <class S>
void InvariantChecker<S>::backward_pass_end(bool completed) {
  if (observers_.backward_passes) backward_passes_.backward_pass_end(context_, completed);
}

template <class S>
void InvariantChecker<S>::module_backward(ModuleId m, bool fp8) {
  if (observers_.backward_passes) backward_passes_.module_backward(context_, fp8);
  if (observers_.numerics) numerics_observer_.module_backward(m, fp8);
}

template <class S>
void InvariantChecker<S>::checkpoint_forward_begin(CaptureId c) {
  if (observers_.numerics) numerics_observer_.checkpoint_forward_begin(c);
}

template <class S>
void InvariantChecker<S>::checkpoint_forward_end(CaptureId, bool) {
  if (observers_.numerics) numerics_observer_.checkpoint_forward_end();
}

template <class S>
void InvariantChecker<S>::recompute_begin(CaptureId c) {
  if (observers_.numerics) numerics_observer_.recompute_begin(context_, c);
}

template <class S>
void InvariantChecker<S>::recompute_end(CaptureId) {
  if (observers_.numerics) numerics_observer_.recompute_end(context_);
}

template <class S>
void InvariantChecker<S>::checkpoint_dropped(CaptureId c) {
  if (observers_.numerics) numerics_observer_.checkpoint_dropped(c);
}

// ---- hooks -------------------------------------------------------------------------------------

template <class S>
void InvariantChecker<S>::forward_update() {
  if (observers_.forward_updates) forward_updates_.forward_update(context_);
  if (observers_.numerics) numerics_observer_.forward_update(context_);
}

template <class S>
void InvariantChecker<S>::backward_update() {
  if (observers_.backward_passes) backward_passes_.backward_update(context_);
  if (observers_.numerics) numerics_observer_.backward_update();
}

template <class S>
void InvariantChecker<S>::discard_forward_amax() {
  if (observers_.numerics) numerics_observer_.discard_forward_amax();
}
template <class S>
void InvariantChecker<S>::registered(ModuleId m) {
  if (observers_.numerics) numerics_observer_.registered(context_, m);
}
template <class S>
void InvariantChecker<S>::stash(ModuleId m) {
  if (observers_.numerics) numerics_observer_.stash(m);
}
template <class S>
void InvariantChecker<S>::save_for_restore(ModuleId m) {
  if (observers_.numerics) numerics_observer_.save_for_restore(m);
}
template <class S>
void InvariantChecker<S>::pop_stash(ModuleId m) {
  if (observers_.numerics) numerics_observer_.pop_stash(context_, m);
}
template <class S>
void InvariantChecker<S>::restore(ModuleId m) {
  if (observers_.numerics) numerics_observer_.restore(m);
}
template <class S>
void InvariantChecker<S>::ownership_installed(CaptureId c) {
  if (observers_.numerics) numerics_observer_.ownership_installed(c);
}
template <class S>
void InvariantChecker<S>::stash_for(ModuleId m, CaptureId c) {
  if (observers_.numerics) numerics_observer_.stash_for(m, c);
}
template <class S>
void InvariantChecker<S>::replay_stash(ModuleId m, CaptureId c, unsigned occurrence) {
  if (observers_.numerics) numerics_observer_.replay_stash(context_, m, c, occurrence);
}
template <class S>
void InvariantChecker<S>::release_stash(CaptureId c) {
  if (observers_.numerics) numerics_observer_.release_stash(c);
}

template class InvariantChecker<statemachine::GrowableStorage>;
template class InvariantChecker<statemachine::FlatStorage>;

}  // namespace fp8sm::explorer
