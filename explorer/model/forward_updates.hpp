// I1's observer: exactly one forward update at each user autocast exit that leaves depth 0
// with FP8 enabled and the program's grad mode on, and none anywhere else. The program's grad
// mode is followed from the grad events (its own pushes set it; a checkpoint's or the backward
// engine's keep it), not read from the table's data.
#pragma once

#include <optional>

#include "explorer/model/observer_context.hpp"
#include "explorer/model/observer_state.hpp"
#include "spec/events.hpp"
#include "spec/step_result.hpp"

namespace fp8sm::explorer {

template <class S>
class ForwardUpdates {
 public:
  static void init(ProgramGradState<S>& state) { state.grad.push_back(true); }
  void bind(ProgramGradState<S>& state) { state_ = &state; }

  void event_fired(const spec::AnyEvent& event, const std::optional<spec::RaisedException>& raised);
  void autocast_exit_begin(const ObserverContext<S>& ctx, bool user);
  void autocast_exit_end(const ObserverContext<S>& ctx);
  void forward_update(const ObserverContext<S>& ctx);

 private:
  ProgramGradState<S>* state_ = nullptr;
  // Within one autocast exit (never between statements).
  bool in_exit_ = false;
  bool exit_expects_update_ = false;
  int exit_updates_ = 0;
};

}  // namespace fp8sm::explorer
