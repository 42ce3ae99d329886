// I2's observer: each backward pass that runs an FP8 module backward makes exactly one
// backward update, and no FP8 module backward follows it in that pass (owner-last). A pass
// lies within one statement, so it carries nothing between statements.
#pragma once

#include "explorer/model/observer_context.hpp"

namespace fp8sm::explorer {

template <class S>
class BackwardPasses {
 public:
  void backward_pass_begin() {
    pass_fp8_backwards_ = 0;
    pass_updates_ = 0;
  }
  void module_backward(const ObserverContext<S>& ctx, bool fp8) {
    if (!fp8) return;
    ++pass_fp8_backwards_;
    if (pass_updates_ > 0) ctx.violate(spec::Invariant::I2, Reason::BackwardAfterPassUpdate);
  }
  void backward_update(const ObserverContext<S>& ctx) {
    ++pass_updates_;
    if (pass_updates_ == 2) ctx.violate(spec::Invariant::I2, Reason::SecondBackwardUpdate);
  }
  void backward_pass_end(const ObserverContext<S>& ctx, bool completed) {
    if (completed && pass_fp8_backwards_ > 0 && pass_updates_ == 0) {
      ctx.violate(spec::Invariant::I2, Reason::NoBackwardUpdateInPass);
    }
  }

 private:
  int pass_fp8_backwards_ = 0;
  int pass_updates_ = 0;
};

}  // namespace fp8sm::explorer
