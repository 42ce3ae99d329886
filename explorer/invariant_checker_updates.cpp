// The checker, I1 and I2: forward updates at autocast exits, backward updates per backward pass,
// and the symbolic metas they fold.
#include "explorer/invariant_checker.hpp"

#include <algorithm>
#include <string>
#include <utility>

namespace fp8sm::explorer {

using spec::Invariant;

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

}  // namespace fp8sm::explorer
