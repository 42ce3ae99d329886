#include "explorer/model/forward_updates.hpp"

namespace fp8sm::explorer {

using spec::Invariant;

template <class S>
void ForwardUpdates<S>::event_fired(const spec::AnyEvent& event, const std::optional<spec::RaisedException>& raised) {
  if (raised) return;
  if (const auto* push = std::get_if<spec::GradPush>(&event)) {
    const bool current = state_->grad.back();
    state_->grad.push_back(push->internal ? current : push->enabled);
  } else if (std::holds_alternative<spec::GradPop>(event)) {
    if (state_->grad.size() > 1) state_->grad.pop_back();
  }
}

template <class S>
void ForwardUpdates<S>::autocast_exit_begin(const ObserverContext<S>& ctx, bool user) {
  in_exit_ = true;
  exit_updates_ = 0;
  // Grad as the program sets it: a reentrant checkpoint's no-grad forward is the checkpoint's
  // business, and the same program without the checkpoint would update here.
  exit_expects_update_ = user && ctx.machine->autocast_depth() == 1 && ctx.machine->fp8_enabled() &&
                         state_->grad.back();
}

template <class S>
void ForwardUpdates<S>::autocast_exit_end(const ObserverContext<S>& ctx) {
  if (exit_expects_update_ && exit_updates_ == 0) ctx.violate(Invariant::I1, Reason::NoForwardUpdateAtExit);
  in_exit_ = false;
}

template <class S>
void ForwardUpdates<S>::forward_update(const ObserverContext<S>& ctx) {
  if (!(in_exit_ && exit_expects_update_ && exit_updates_ == 0)) {
    ctx.violate(Invariant::I1, in_exit_ && exit_expects_update_ ? Reason::SecondForwardUpdateAtExit
                                                                : Reason::ForwardUpdateElsewhere);
  }
  ++exit_updates_;
}

template class ForwardUpdates<statemachine::GrowableStorage>;
template class ForwardUpdates<statemachine::FlatStorage>;

}  // namespace fp8sm::explorer
