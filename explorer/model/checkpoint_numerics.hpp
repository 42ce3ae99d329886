// The observer of I4, I5 and I9, and of the numerics I8 compares: every module's symbolic
// forward and backward meta (what each cast reads and accumulates, what each update folds);
// stashes and their pairing with recomputes (each module's deque upstream and in pr3213, each
// checkpoint's kept stash in fp8sm, upstream's FIFO of captured bits, followed from the
// events); what each checkpoint's original forward saw, against what its recomputes see;
// registration.
#pragma once

#include <optional>

#include "explorer/model/observer_context.hpp"
#include "explorer/model/observer_state.hpp"
#include "spec/events.hpp"
#include "spec/step_result.hpp"

namespace fp8sm::explorer {

template <class S>
class CheckpointNumerics {
 public:
  using State = NumericsState<S>;
  void bind(State& state) { state_ = &state; }
  const State& state() const { return *state_; }

  void event_fired(const ObserverContext<S>& ctx, const spec::AnyEvent& event,
                   const std::optional<spec::RaisedException>& raised);
  void step_begin(int step) { state_->step = step; }
  void step_end(const ObserverContext<S>& ctx);

  // Updates and gradient casts.
  void forward_update(const ObserverContext<S>& ctx);
  void discard_forward_amax();
  void module_backward(ModuleId m, bool fp8);
  void backward_update();

  // Extents, casts, registration, stashes.
  void checkpoint_forward_begin(CaptureId c);
  void checkpoint_forward_end();
  void recompute_begin(const ObserverContext<S>& ctx, CaptureId c);
  void recompute_end(const ObserverContext<S>& ctx);
  void ownership_installed(CaptureId c);
  void module_computed(const ObserverContext<S>& ctx, ModuleId m, bool recompute);
  void registered(const ObserverContext<S>& ctx, ModuleId m);
  void stash(ModuleId m);
  void save_for_restore(ModuleId m);
  void pop_stash(const ObserverContext<S>& ctx, ModuleId m);
  void restore(ModuleId m);
  void stash_for(ModuleId m, CaptureId c);
  void replay_stash(const ObserverContext<S>& ctx, ModuleId m, CaptureId c, unsigned occurrence);
  void release_stash(CaptureId c);
  void checkpoint_dropped(CaptureId c);

 private:
  using Id = typename S::Id;
  typename State::Module& module(ModuleId m);
  // The innermost recompute extent's position, or -1.
  int innermost_recompute() const;

  State* state_ = nullptr;
};

}  // namespace fp8sm::explorer
