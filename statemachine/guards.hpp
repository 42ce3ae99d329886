// The guards of the transition table: small named predicates over the event, the machine's
// data and the states of the other regions. Each is one line of domain logic.
//
// Reading another region: regions are processed in order (ownership, checkpoint, autocast,
// grad), so a guard of an earlier region sees a later region as it was before the event. The
// table only reads regions that the event does not change, or later ones (documented per row).
#pragma once

#include <boost/msm/back/metafunctions.hpp>

#include "statemachine/machine_data.hpp"
#include "statemachine/states.hpp"

namespace fp8sm::statemachine {

// Whether State's region (states.hpp) is in State.
template <class State, class Fsm>
bool region_is(const Fsm& fsm) {
  return fsm.current_state()[State::kRegion] ==
         boost::msm::back::get_state_id<typename Fsm::stt, State>::value;
}

}  // namespace fp8sm::statemachine

namespace fp8sm::statemachine::guards {

using spec::Semantics;

// One guard: a functor named NAME returning EXPR, where EXPR may use `event` and `fsm`
// (the back-end; its data is fsm.data()).
#define FP8SM_GUARD(NAME, EXPR)                                                  \
  struct NAME {                                                                  \
    template <class Event, class Fsm, class Source, class Target>                \
    bool operator()(const Event& event, Fsm& fsm, Source&, Target&) const {      \
      (void)event;                                                               \
      (void)fsm;                                                                 \
      return (EXPR);                                                             \
    }                                                                            \
  };

// A guard that reads the semantics and nothing else: NAME::holds_under(semantics) is EXPR. Its
// value under each semantics is known without a machine, so the row catalogue carries it
// (row_catalogue.hpp's GuardTree) and the pictures of the table decide it there.
#define FP8SM_SEMANTICS_GUARD(NAME, EXPR)                                        \
  struct NAME {                                                                  \
    static constexpr bool holds_under(Semantics semantics) { return (EXPR); }    \
    template <class Event, class Fsm, class Source, class Target>                \
    bool operator()(const Event&, Fsm& fsm, Source&, Target&) const {            \
      return holds_under(fsm.data().semantics);                                  \
    }                                                                            \
  };

// Which semantics the machine runs.
FP8SM_SEMANTICS_GUARD(Upstream, semantics == Semantics::Upstream)
FP8SM_SEMANTICS_GUARD(Pr3213, semantics == Semantics::Pr3213)
FP8SM_SEMANTICS_GUARD(Fp8sm, semantics == Semantics::Fp8sm)
FP8SM_SEMANTICS_GUARD(Pr3213OrFp8sm, semantics != Semantics::Upstream)  // rows fp8sm keeps from pr3213

// Other regions (none of them is changed by the events whose rows read them, or comes later).
FP8SM_GUARD(InFp8Autocast, region_is<states::Fp8Autocast>(fsm))
FP8SM_GUARD(GradIsOn, region_is<states::GradEnabled>(fsm))
FP8SM_GUARD(RecomputePhase, region_is<states::InRecompute>(fsm))

// Autocast.
FP8SM_GUARD(AtDepthZero, fsm.data().autocasts.empty())  // read before the autocast region pushes
FP8SM_GUARD(OpenedByRecompute, event.recompute_internal)
FP8SM_GUARD(EnablesFp8, event.enabled)
FP8SM_GUARD(BitAtAutocastEntry, fsm.data().bit_at_autocast_entry.back())
FP8SM_GUARD(LeavesOutermost, fsm.data().autocasts.size() == 1u)
FP8SM_GUARD(ExitingRecomputeAutocast, fsm.data().autocasts.back().recompute_internal)
FP8SM_GUARD(RestoresNoAutocast, fsm.data().autocasts.back().mode_before == AutocastMode::None)
FP8SM_GUARD(RestoresFp8, fsm.data().autocasts.back().mode_before == AutocastMode::Fp8)
FP8SM_GUARD(RestoresNonFp8, fsm.data().autocasts.back().mode_before == AutocastMode::NonFp8)

// Grad mode.
FP8SM_GUARD(EnablesGrad, event.enabled)
FP8SM_GUARD(GradBeforeWasOn, fsm.data().grad_frames.back().grad_before)
FP8SM_GUARD(UserGradIsOn, fsm.data().user_grad)

// Checkpoint frames.
FP8SM_GUARD(Reserves, event.reentrant)  // pr3213 reserves the bit at a reentrant forward
FP8SM_GUARD(Exceptional, event.exceptional)
FP8SM_GUARD(BitBeforeFrame, fsm.data().ownership_frames.back().bit_before)
FP8SM_GUARD(FramePrevOutside, fsm.data().checkpoint_frames.back().before == CheckpointPhase::Outside)
FP8SM_GUARD(FramePrevOriginal, fsm.data().checkpoint_frames.back().before == CheckpointPhase::OriginalForward)
FP8SM_GUARD(FramePrevRecompute, fsm.data().checkpoint_frames.back().before == CheckpointPhase::Recompute)
FP8SM_GUARD(InReplay, fsm.data().innermost_recompute() >= 0)               // fp8sm
FP8SM_GUARD(HasReplayEntry, fsm.data().replay_entry(event.module).has_value())    // fp8sm
FP8SM_GUARD(ReplayEntryIsFp8, fsm.data().replay_entry(event.module)->fp8)          // fp8sm

// Captured bits at recompute entry.
FP8SM_GUARD(FifoEmpty, fsm.data().fifo.empty())
FP8SM_GUARD(FifoFrontBit, fsm.data().fifo.front().bit)
FP8SM_GUARD(CaptureComplete, fsm.data().capture_record(event.capture).bit != CaptureRecord::Bit::Unset &&
                                 fsm.data().capture_record(event.capture).completed)
FP8SM_GUARD(CapturedBit, fsm.data().capture_record(event.capture).bit == CaptureRecord::Bit::True)

// Modules.
FP8SM_GUARD(ModuleIsFp8, fsm.data().module_flags(event.module).fp8)
FP8SM_GUARD(ModuleHasStashPos, fsm.data().module_flags(event.module).has_stash_pos)
FP8SM_GUARD(ModuleStashEmpty, fsm.data().module_flags(event.module).stash_depth == 0)
FP8SM_GUARD(ModuleHasSavedMeta, fsm.data().module_flags(event.module).has_saved_for_restore)
FP8SM_GUARD(RestorePending, fsm.data().module_flags(event.module).restore_pending)  // fp8sm
FP8SM_GUARD(NodeIsOwner, event.owner)
FP8SM_GUARD(NodeIsFp8, event.fp8)
FP8SM_GUARD(NodeRanBackward, event.ran_before)
FP8SM_GUARD(SlotReached, event.reached)
FP8SM_GUARD(SlotTaken, event.taken)

// Backward passes (fp8sm).
FP8SM_GUARD(PassCompleted, event.completed)
FP8SM_GUARD(PassRanFp8Backward, fsm.data().fp8_backwards_in_pass > 0)

#undef FP8SM_GUARD
#undef FP8SM_SEMANTICS_GUARD

}  // namespace fp8sm::statemachine::guards
