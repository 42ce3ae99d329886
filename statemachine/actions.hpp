// The actions of the transition table: each changes the data its region owns and reports
// through Hooks. None decides anything: the decisions are the rows and guards of the table.
#pragma once

#include <algorithm>
#include <string>
#include <type_traits>
#include <utility>

#include "statemachine/hooks.hpp"
#include "statemachine/machine_data.hpp"
#include "statemachine/states.hpp"

namespace fp8sm::statemachine::actions {

// The ownership bit before the event, read from the source state of an ownership row.
template <class Source>
constexpr bool bit_of() {
  static_assert(std::is_same_v<Source, states::OwnershipAvailable> ||
                    std::is_same_v<Source, states::OwnershipConsumed>,
                "bit_of is for rows of the ownership region");
  return std::is_same_v<Source, states::OwnershipAvailable>;
}

template <class Source>
constexpr CheckpointPhase phase_of() {
  if constexpr (std::is_same_v<Source, states::InOriginalForward>) return CheckpointPhase::OriginalForward;
  if constexpr (std::is_same_v<Source, states::InRecompute>) return CheckpointPhase::Recompute;
  return CheckpointPhase::Outside;
}

template <class Source>
constexpr AutocastMode mode_of() {
  if constexpr (std::is_same_v<Source, states::Fp8Autocast>) return AutocastMode::Fp8;
  if constexpr (std::is_same_v<Source, states::NonFp8Autocast>) return AutocastMode::NonFp8;
  return AutocastMode::None;
}

// One action: a functor named NAME running its body (the rest of the arguments), which may use
// `event`, `fsm`, `data` (fsm.data(), of type Data: MachineData over its storage), `hooks`
// (fsm.hooks()) and the type `Source`.
#define FP8SM_ACTION(NAME, ...)                                                   \
  struct NAME {                                                                   \
    template <class Event, class Fsm, class Source, class Target>                 \
    void operator()(const Event& event, Fsm& fsm, Source&, Target&) const {       \
      (void)event;                                                                \
      auto& data = fsm.data();                                                    \
      (void)data;                                                                 \
      using Data [[maybe_unused]] = std::remove_reference_t<decltype(data)>;      \
      using S [[maybe_unused]] = typename Data::Storage;                          \
      Hooks& hooks = fsm.hooks();                                                 \
      (void)hooks;                                                                \
      __VA_ARGS__;                                                                \
    }                                                                             \
  };

// A failure TE raises from inside the operation: recorded, turned into an exception by the
// back-end wrapper after the event (so no C++ exception crosses Boost.MSM).
#define FP8SM_RAISE(NAME, KIND, MESSAGE) \
  FP8SM_ACTION(NAME, data.error = spec::RaisedException{KIND, MESSAGE})

// --- ownership region -------------------------------------------------------------------
FP8SM_ACTION(RememberBitAtAutocastEntry, data.bit_at_autocast_entry.push_back(bit_of<Source>()))
FP8SM_ACTION(ForgetBitAtAutocastEntry, data.bit_at_autocast_entry.pop_back())
FP8SM_ACTION(PushBitOntoFifo, {
  data.fifo.push_back(typename Data::FifoEntry{bit_of<Source>(), to_id<S>(event.capture)});
  hooks.ownership_captured(event.capture);
})
FP8SM_ACTION(InstallFifoFront, {
  const CaptureId from = data.fifo.front().capture;
  data.fifo.erase(data.fifo.begin());
  hooks.ownership_installed(from);
})
FP8SM_ACTION(CaptureBitInFrame, {
  data.capture(event.capture) = CaptureRecord{
      bit_of<Source>() ? CaptureRecord::Bit::True : CaptureRecord::Bit::False, false};
  data.ownership_frames.push_back(typename Data::OwnershipFrame{bit_of<Source>(), to_id<S>(event.capture)});
  hooks.ownership_captured(event.capture);
})
FP8SM_ACTION(CompleteCapture, {
  data.captures[data.ownership_frames.back().capture].completed = true;
  data.ownership_frames.pop_back();
})
FP8SM_ACTION(InvalidateCapture, {
  data.captures[data.ownership_frames.back().capture] = CaptureRecord{};
  data.ownership_frames.pop_back();
})
FP8SM_ACTION(InstallCapturedBit, {
  data.ownership_frames.push_back(typename Data::OwnershipFrame{bit_of<Source>(), to_id<S>(event.capture)});
  hooks.ownership_installed(event.capture);
})
FP8SM_ACTION(LeaveRecomputeFrame, data.ownership_frames.pop_back())
FP8SM_ACTION(ClaimOwnership, hooks.claimed(event.module, true))
FP8SM_ACTION(DeclineOwnership, hooks.claimed(event.module, false))
FP8SM_ACTION(BackwardUpdate, hooks.backward_update())
FP8SM_ACTION(CountFp8Backward, ++data.fp8_backwards_in_pass)
FP8SM_ACTION(ForgetPassBackwards, data.fp8_backwards_in_pass = 0)
FP8SM_ACTION(UpdateBackwardAtPassEnd, {
  data.fp8_backwards_in_pass = 0;
  hooks.backward_update();
})
FP8SM_RAISE(RaiseBackwardObjectsFreed, spec::ExceptionKind::AttributeError, "'NoneType' object has no attribute 'grad_output'")
FP8SM_RAISE(RaiseSlotNotRecomputed, spec::ExceptionKind::IndexError, "list index out of range")
FP8SM_RAISE(RaiseSlotAlreadyTaken, spec::ExceptionKind::TypeError,
            "Output of saved tensor unpack_hook expected to be a Tensor but got result of type NoneType")
FP8SM_RAISE(RaiseEmptyFifo, spec::ExceptionKind::IndexError, "pop from empty list")
FP8SM_RAISE(RaiseNotCaptured, spec::ExceptionKind::RuntimeError,
            "FP8 recompute state was not captured during a completed original forward")

// --- checkpoint region --------------------------------------------------------------------
FP8SM_ACTION(PushCheckpointFrame, data.checkpoint_frames.push_back(typename Data::CheckpointFrame{
                                      phase_of<Source>(), to_id<S>(event.capture),
                                      std::is_same_v<Event, spec::RecomputeEnter>}))
FP8SM_ACTION(PopCheckpointFrame, {
  data.forget_replayed_of_top_frame();
  data.checkpoint_frames.pop_back();
})
FP8SM_ACTION(MarkModuleFp8, data.module(event.module).fp8 = true)
FP8SM_ACTION(MarkModuleNotFp8, data.module(event.module).fp8 = false)
// REGISTER is idempotent in TE (the module's buffer key is checked first).
FP8SM_ACTION(RegisterIfNew, {
  ModuleFlags& m = data.module(event.module);
  if (!m.registered) {
    m.registered = true;
    hooks.registered(event.module);
  }
})
FP8SM_ACTION(StashLiveMeta, {
  ModuleFlags& m = data.module(event.module);
  m.has_stash_pos = true;
  ++m.stash_depth;
  hooks.stash(event.module);
})
FP8SM_ACTION(SaveLiveMetaForRestore, {
  data.module(event.module).has_saved_for_restore = true;
  hooks.save_for_restore(event.module);
})
FP8SM_ACTION(PopStash, {
  --data.module(event.module).stash_depth;
  hooks.pop_stash(event.module);
})
FP8SM_ACTION(RestoreLiveMeta, hooks.restore(event.module))
// fp8sm: the checkpoint instance keeps the stash: every open original forward of the current
// context records the run (an enclosing checkpoint's recompute replays an inner one's modules
// too), with a clone of the live meta when the module runs in FP8.
FP8SM_ACTION(StashIntoCheckpoints, {
  const bool fp8 = data.module(event.module).fp8;
  constexpr std::size_t kBatch = 64;  // the runs added to the stash at once (nesting is at most 64)
  typename Data::StashedRun runs[kBatch];
  std::size_t n = 0;
  for (auto it = data.checkpoint_frames.rbegin(); it != data.checkpoint_frames.rend() && !it->recompute; ++it) {
    data.open_stash(it->capture);
    if (n == kBatch) data.add_stash_runs(runs, std::exchange(n, 0));
    runs[n++] = typename Data::StashedRun{it->capture, to_id<S>(event.module), fp8};
    if (fp8) hooks.stash_for(event.module, it->capture);
  }
  data.add_stash_runs(runs, n);
})
FP8SM_ACTION(SaveLiveMetaForReplay, {
  data.module(event.module).restore_pending = true;
  hooks.save_for_restore(event.module);
})
// The recompute's k-th run of the module follows the original's k-th run; an FP8 one gets the
// meta stashed for it (its rank among the module's FP8 runs names the clone).
FP8SM_ACTION(ReplayStashedMeta, {
  const int frame = data.innermost_recompute();
  const CaptureId capture = data.checkpoint_frames[static_cast<std::size_t>(frame)].capture;
  const unsigned fp8_rank = data.replay_entry(event.module)->fp8_rank;
  data.note_replayed(frame, event.module);
  hooks.replay_stash(event.module, capture, fp8_rank);
})
FP8SM_ACTION(SkipReplayedRun, data.note_replayed(data.innermost_recompute(), event.module))
FP8SM_ACTION(RestoreAfterReplay, {
  data.module(event.module).restore_pending = false;
  hooks.restore(event.module);
})
FP8SM_ACTION(ReleaseCheckpointStash, {
  data.clear_stash(event.capture);
  hooks.release_stash(event.capture);
})
FP8SM_RAISE(RaiseMissingStashKey, spec::ExceptionKind::KeyError, "'global_fp8_buffer_pos_fwd_recompute'")
FP8SM_RAISE(RaiseEmptyStash, spec::ExceptionKind::IndexError, "pop from an empty deque")
FP8SM_RAISE(RaiseMissingSavedMeta, spec::ExceptionKind::KeyError, "'updated_amax_history_fwd'")

// --- autocast region ----------------------------------------------------------------------
FP8SM_ACTION(PushAutocast,
             data.autocasts.push_back(typename Data::AutocastFrame{mode_of<Source>(), event.recompute_internal}))
FP8SM_ACTION(PopAutocast, data.autocasts.pop_back())
FP8SM_ACTION(PopAutocastAndDiscardForwardAmax, {
  data.autocasts.pop_back();
  hooks.discard_forward_amax();
})
FP8SM_ACTION(PopAutocastAndUpdateForward, {
  data.autocasts.pop_back();
  hooks.forward_update();
})

// --- grad region --------------------------------------------------------------------------
FP8SM_ACTION(PushGrad, {
  data.grad_frames.push_back(
      typename Data::GradFrame{std::is_same_v<Source, states::GradEnabled>, data.user_grad});
  if (!event.internal) data.user_grad = event.enabled;
})
FP8SM_ACTION(PopGrad, {
  data.user_grad = data.grad_frames.back().user_grad_before;
  data.grad_frames.pop_back();
})

#undef FP8SM_RAISE
#undef FP8SM_ACTION

}  // namespace fp8sm::statemachine::actions
