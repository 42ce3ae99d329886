// The transition table: spec §3 as Boost.MSM rows, for every semantics at once.
//
// Four orthogonal regions, processed in this order for every event:
//   0 ownership   OwnershipAvailable / OwnershipConsumed             (TE: is_first_fp8_module)
//   1 checkpoint  OutsideCheckpoint / InOriginalForward / InRecompute (region, phase flags)
//   2 autocast    NoAutocast / Fp8Autocast / NonFp8Autocast          (depth 0 / fp8_enabled)
//   3 grad        GradEnabled / GradDisabled                         (torch grad mode)
// The order matters in one way only: a row reading another region sees regions after its own
// as they were before the event. Ownership comes first because its autocast-entry row asks
// "depth 0?" before the autocast region pushes, as TE resets the bit before depth += 1.
//
// Semantics differ only in guards (Upstream / Pr3213 / Fp8sm; Pr3213OrFp8sm for the rows fp8sm
// keeps from pr3213). Rows an event does not need in one
// semantics are simply absent for it: an event no region handles is a no-op.
//
// Guards of rows that share a source state and an event are mutually exclusive, so the order
// in which Boost.MSM tries them never matters.
#pragma once

// Boost.MPL's limits must be raised before any Boost header is read, so they are compile
// definitions of the fp8sm_boost_msm target (top-level CMakeLists.txt), checked here.
#if !defined(BOOST_MPL_CFG_NO_PREPROCESSED_HEADERS) || BOOST_MPL_LIMIT_VECTOR_SIZE < 50
#error "compile with -DBOOST_MPL_CFG_NO_PREPROCESSED_HEADERS -DBOOST_MPL_LIMIT_VECTOR_SIZE=50"
#endif

#include <boost/mpl/back_inserter.hpp>
#include <boost/mpl/copy.hpp>
#include <boost/mpl/vector.hpp>
#include <boost/msm/front/euml/operator.hpp>
#include <boost/msm/front/functor_row.hpp>
#include <boost/msm/front/state_machine_def.hpp>
#include <cstdint>
#include <typeindex>
#include <vector>

#include "spec/events.hpp"
#include "statemachine/actions.hpp"
#include "statemachine/guards.hpp"
#include "statemachine/hooks.hpp"
#include "statemachine/machine_data.hpp"
#include "statemachine/row_catalogue.hpp"
#include "statemachine/states.hpp"

namespace fp8sm::statemachine {

namespace table {

namespace mpl = boost::mpl;
namespace msmf = boost::msm::front;
using msmf::none;
using msmf::euml::And_;
using msmf::euml::Not_;
using msmf::euml::Or_;
using namespace spec;     // events
using namespace states;   // states
using namespace guards;   // guards
using namespace actions;  // actions

// Runs the row's action and, when coverage or the rows taken are being recorded, notes the row.
template <class Action, class Key>
struct Counted {
  template <class Event, class Fsm, class Source, class Target>
  void operator()(const Event& event, Fsm& fsm, Source& source, Target& target) const {
    if (fsm.coverage != nullptr || fsm.rows_taken != nullptr) fsm.template count_row<Key>();
    Action{}(event, fsm, source, target);
  }
};

// One row of the table. Columns as in Boost.MSM: Start | Event | Next | Action | Guard.
template <class Source, class Event, class Target, class Action, class Guard>
using R = msmf::Row<Source, Event, Target,
                    Counted<Action, RowKey<Source, Event, Target, Action, Guard>>, Guard>;

template <class... Actions>
using Seq = msmf::ActionSequence_<mpl::vector<Actions...>>;

// Named compositions, so that each row reads like the spec.
using ReArmsOnEntry = And_<AtDepthZero, Or_<Upstream, Not_<OpenedByRecompute>>>;
using ClaimApplies = And_<GradIsOn, ModuleIsFp8>;
using ReArmsOnClaim = And_<Upstream, RecomputePhase>;
using NotFp8sm = Not_<Fp8sm>;
using DiscardsOnExit = And_<Fp8sm, Not_<ExitingRecomputeAutocast>>;
using Pr3213Reserves = And_<Pr3213OrFp8sm, And_<Reserves, InFp8Autocast>>;
using FailedForward = And_<Pr3213OrFp8sm, Exceptional>;
using EntersRecompute = Or_<Upstream, CaptureComplete>;
// §3.1: upstream and pr3213 read torch's grad mode; fp8sm the program's own, so that a
// reentrant checkpoint's no-grad forward does not hide the update of an autocast inside it.
#ifndef FP8SM_TEST_ONLY_BREAK_FP8SM
using UpdatesForwardOnExit = And_<
    RestoresNoAutocast,
    Or_<And_<Upstream, GradIsOn>,
        And_<Not_<ExitingRecomputeAutocast>, Or_<And_<Pr3213, GradIsOn>, And_<Fp8sm, UserGradIsOn>>>>>;
#else
// A deliberately broken fp8sm, built only for tests/explorer/test_broken_semantics.cpp: one guard
// removed, so a recompute's own autocast makes a forward update again. The explorer must
// catch it.
using UpdatesForwardOnExit = And_<
    RestoresNoAutocast,
    Or_<And_<Upstream, GradIsOn>,
        Or_<And_<Not_<ExitingRecomputeAutocast>, And_<Pr3213, GradIsOn>>, And_<Fp8sm, UserGradIsOn>>>>;
#endif

// clang-format off
// ===== Region 0: ownership (F) ==========================================================
using OwnershipRows = mpl::vector<
//  Start               | Event                  | Next               | Action                      | Guard
// §3.1 AC_ENTER: remember snap.F; at depth 0 re-arm F (pr3213: not for a recompute's autocast)
R<OwnershipConsumed , AutocastEnter          , OwnershipAvailable , RememberBitAtAutocastEntry  , ReArmsOnEntry                                   >,
R<OwnershipConsumed , AutocastEnter          , none               , RememberBitAtAutocastEntry  , Not_<ReArmsOnEntry>                             >,
R<OwnershipAvailable, AutocastEnter          , none               , RememberBitAtAutocastEntry  , none                                            >,
// ----------------------------------------------------------------------------------------
// §3.1 AC_EXIT, nested exit: upstream F := snap.F (revives a bit consumed inside);
//      pr3213 F := snap.F AND F (monotonic merge)
R<OwnershipAvailable, AutocastExit           , OwnershipConsumed  , ForgetBitAtAutocastEntry    , Not_<BitAtAutocastEntry>                        >,
R<OwnershipAvailable, AutocastExit           , none               , ForgetBitAtAutocastEntry    , BitAtAutocastEntry                              >,
R<OwnershipConsumed , AutocastExit           , OwnershipAvailable , ForgetBitAtAutocastEntry    , And_<Upstream, BitAtAutocastEntry>              >,
R<OwnershipConsumed , AutocastExit           , none               , ForgetBitAtAutocastEntry    , Not_<And_<Upstream, BitAtAutocastEntry>>        >,
// ----------------------------------------------------------------------------------------
// §3.2 CLAIM (grad on, module in FP8): owner := F; F := false.
//      Upstream re-arms F during a recompute, so every recomputed module owns.
//      fp8sm consumes F the same way but no node owns: the pass makes the update (below).
R<OwnershipAvailable, ModuleClaim            , none               , ClaimOwnership              , And_<ClaimApplies, ReArmsOnClaim>               >,
R<OwnershipAvailable, ModuleClaim            , OwnershipConsumed  , ClaimOwnership              , And_<ClaimApplies, And_<Not_<ReArmsOnClaim>, Not_<Fp8sm>>> >,
R<OwnershipAvailable, ModuleClaim            , OwnershipConsumed  , DeclineOwnership            , And_<ClaimApplies, Fp8sm>                       >,
R<OwnershipConsumed , ModuleClaim            , none               , DeclineOwnership            , ClaimApplies                                    >,
// ----------------------------------------------------------------------------------------
// §3.4 ARF_ENTER(fwd), upstream: FIFO.push_back(F)
R<OwnershipAvailable, CheckpointForwardEnter , none               , PushBitOntoFifo             , Upstream                                        >,
R<OwnershipConsumed , CheckpointForwardEnter , none               , PushBitOntoFifo             , Upstream                                        >,
// §3.4 ARF_ENTER(fwd), pr3213: C.bit := F; a reentrant forward in FP8 reserves the bit
R<OwnershipAvailable, CheckpointForwardEnter , OwnershipConsumed  , CaptureBitInFrame           , Pr3213Reserves                                  >,
R<OwnershipAvailable, CheckpointForwardEnter , none               , CaptureBitInFrame           , And_<Pr3213OrFp8sm, Not_<Pr3213Reserves>>              >,
R<OwnershipConsumed , CheckpointForwardEnter , none               , CaptureBitInFrame           , Pr3213OrFp8sm                                          >,
// ----------------------------------------------------------------------------------------
// §3.4 ARF_EXIT(fwd), pr3213: a completed forward validates C
R<OwnershipAvailable, CheckpointForwardExit  , none               , CompleteCapture             , And_<Pr3213OrFp8sm, Not_<Exceptional>>                 >,
R<OwnershipConsumed , CheckpointForwardExit  , none               , CompleteCapture             , And_<Pr3213OrFp8sm, Not_<Exceptional>>                 >,
// forward exception (pr3213): F := prev.F, C invalid (upstream: F untouched, no row)
R<OwnershipAvailable, CheckpointForwardExit  , OwnershipConsumed  , InvalidateCapture           , And_<FailedForward, Not_<BitBeforeFrame>>       >,
R<OwnershipAvailable, CheckpointForwardExit  , none               , InvalidateCapture           , And_<FailedForward, BitBeforeFrame>             >,
R<OwnershipConsumed , CheckpointForwardExit  , OwnershipAvailable , InvalidateCapture           , And_<FailedForward, BitBeforeFrame>             >,
R<OwnershipConsumed , CheckpointForwardExit  , none               , InvalidateCapture           , And_<FailedForward, Not_<BitBeforeFrame>>       >,
// ----------------------------------------------------------------------------------------
// §3.4 ARF_ENTER(rc), upstream: F := FIFO.pop_front(), whoever pushed it.
//      Recompute-entry failure: an empty FIFO raises IndexError after the checkpoint region
//      has set region and phase, which stay set (no exit runs).
R<OwnershipAvailable, RecomputeEnter         , none               , RaiseEmptyFifo              , And_<Upstream, FifoEmpty>                       >,
R<OwnershipConsumed , RecomputeEnter         , none               , RaiseEmptyFifo              , And_<Upstream, FifoEmpty>                       >,
R<OwnershipAvailable, RecomputeEnter         , none               , InstallFifoFront            , And_<Upstream, And_<Not_<FifoEmpty>, FifoFrontBit>>       >,
R<OwnershipAvailable, RecomputeEnter         , OwnershipConsumed  , InstallFifoFront            , And_<Upstream, And_<Not_<FifoEmpty>, Not_<FifoFrontBit>>> >,
R<OwnershipConsumed , RecomputeEnter         , OwnershipAvailable , InstallFifoFront            , And_<Upstream, And_<Not_<FifoEmpty>, FifoFrontBit>>       >,
R<OwnershipConsumed , RecomputeEnter         , none               , InstallFifoFront            , And_<Upstream, And_<Not_<FifoEmpty>, Not_<FifoFrontBit>>> >,
// §3.4 ARF_ENTER(rc), pr3213: recompute-entry failure when C is unset or incomplete raises
//      RuntimeError and changes nothing; otherwise prev.F saved, F := C.bit
R<OwnershipAvailable, RecomputeEnter         , none               , RaiseNotCaptured            , And_<Pr3213OrFp8sm, Not_<CaptureComplete>>             >,
R<OwnershipConsumed , RecomputeEnter         , none               , RaiseNotCaptured            , And_<Pr3213OrFp8sm, Not_<CaptureComplete>>             >,
R<OwnershipAvailable, RecomputeEnter         , none               , InstallCapturedBit          , And_<Pr3213OrFp8sm, And_<CaptureComplete, CapturedBit>>       >,
R<OwnershipAvailable, RecomputeEnter         , OwnershipConsumed  , InstallCapturedBit          , And_<Pr3213OrFp8sm, And_<CaptureComplete, Not_<CapturedBit>>> >,
R<OwnershipConsumed , RecomputeEnter         , OwnershipAvailable , InstallCapturedBit          , And_<Pr3213OrFp8sm, And_<CaptureComplete, CapturedBit>>       >,
R<OwnershipConsumed , RecomputeEnter         , none               , InstallCapturedBit          , And_<Pr3213OrFp8sm, And_<CaptureComplete, Not_<CapturedBit>>> >,
// ----------------------------------------------------------------------------------------
// §3.4 ARF_EXIT(rc), pr3213: F := prev.F outright, whatever the recompute (or its failure)
//      consumed (upstream: F untouched, no row)
R<OwnershipAvailable, RecomputeExit          , none               , LeaveRecomputeFrame         , And_<Pr3213OrFp8sm, BitBeforeFrame>                    >,
R<OwnershipAvailable, RecomputeExit          , OwnershipConsumed  , LeaveRecomputeFrame         , And_<Pr3213OrFp8sm, Not_<BitBeforeFrame>>              >,
R<OwnershipConsumed , RecomputeExit          , OwnershipAvailable , LeaveRecomputeFrame         , And_<Pr3213OrFp8sm, BitBeforeFrame>                    >,
R<OwnershipConsumed , RecomputeExit          , none               , LeaveRecomputeFrame         , And_<Pr3213OrFp8sm, Not_<BitBeforeFrame>>              >
>;

// ===== Region 0 continued: backward (the ownership region's rows for module backward) =====
using BackwardRows = mpl::vector<
//  Start               | Event                  | Next               | Action                      | Guard
// §3.3 a module node's backward runs at most once in TE (>= 2.16): a completed backward sets
//      its ctx.backward_objects to None, so the second backward of a retained graph through it
//      raises AttributeError on its first line, before any unpack. fp8sm's Linear keeps what
//      its backward needs: a retained graph backpropagates again (no row: nothing happens).
R<OwnershipAvailable, ModuleBackwardBegin    , none               , RaiseBackwardObjectsFreed   , And_<Not_<Fp8sm>, NodeRanBackward>              >,
R<OwnershipConsumed , ModuleBackwardBegin    , none               , RaiseBackwardObjectsFreed   , And_<Not_<Fp8sm>, NodeRanBackward>              >,
// ----------------------------------------------------------------------------------------
// §3.5 saved-tensor slots of a non-reentrant frame, at each unpack (after the recompute it
//      triggered): a slot the recompute did not reach raises IndexError; a slot an earlier
//      unpack took holds None in TE, which torch refuses with TypeError. fp8sm's frame keeps
//      a retained graph's recomputed tensors, so its second backward unpacks them again
//      (checkpointing then changes nothing a retained graph can do: I8).
R<OwnershipAvailable, SavedTensorUnpack      , none               , RaiseSlotNotRecomputed      , Not_<SlotReached>                               >,
R<OwnershipConsumed , SavedTensorUnpack      , none               , RaiseSlotNotRecomputed      , Not_<SlotReached>                               >,
R<OwnershipAvailable, SavedTensorUnpack      , none               , RaiseSlotAlreadyTaken       , And_<Not_<Fp8sm>, SlotTaken>                    >,
R<OwnershipConsumed , SavedTensorUnpack      , none               , RaiseSlotAlreadyTaken       , And_<Not_<Fp8sm>, SlotTaken>                    >,
// ----------------------------------------------------------------------------------------
// §3.3 MB: the owner's backward makes the backward update (upstream, pr3213)
R<OwnershipAvailable, ModuleBackward         , none               , BackwardUpdate              , And_<NodeIsOwner, Not_<Fp8sm>>                  >,
R<OwnershipConsumed , ModuleBackward         , none               , BackwardUpdate              , And_<NodeIsOwner, Not_<Fp8sm>>                  >,
// fp8sm: the backward update belongs to the pass: one, when a pass that ran an FP8 module
//      backward completes (after its last module backward, whatever the graph's shape)
R<OwnershipAvailable, ModuleBackward         , none               , CountFp8Backward            , And_<Fp8sm, NodeIsFp8>                          >,
R<OwnershipConsumed , ModuleBackward         , none               , CountFp8Backward            , And_<Fp8sm, NodeIsFp8>                          >,
R<OwnershipAvailable, BackwardPassBegin      , none               , ForgetPassBackwards         , Fp8sm                                           >,
R<OwnershipConsumed , BackwardPassBegin      , none               , ForgetPassBackwards         , Fp8sm                                           >,
R<OwnershipAvailable, BackwardPassEnd        , none               , UpdateBackwardAtPassEnd     , And_<Fp8sm, And_<PassCompleted, PassRanFp8Backward>> >,
R<OwnershipConsumed , BackwardPassEnd        , none               , UpdateBackwardAtPassEnd     , And_<Fp8sm, And_<PassCompleted, PassRanFp8Backward>> >
>;

// ===== Region 1: checkpoint (region, phase) and the module rows that depend on it ========
using CheckpointRows = mpl::vector<
//  Start              | Event                  | Next               | Action                      | Guard
// §3.4 ARF_ENTER(fwd): region := true, phase := false (the previous pair is remembered)
R<OutsideCheckpoint , CheckpointForwardEnter , InOriginalForward  , PushCheckpointFrame         , none                                            >,
R<InOriginalForward , CheckpointForwardEnter , none               , PushCheckpointFrame         , none                                            >,
R<InRecompute       , CheckpointForwardEnter , InOriginalForward  , PushCheckpointFrame         , none                                            >,
// ----------------------------------------------------------------------------------------
// §3.4 ARF_EXIT(fwd), upstream: both flags cleared, not restored (an inner checkpoint's exit
//      wipes an enclosing one's)
R<InOriginalForward , CheckpointForwardExit  , OutsideCheckpoint  , PopCheckpointFrame          , Upstream                                        >,
R<OutsideCheckpoint , CheckpointForwardExit  , none               , PopCheckpointFrame          , Upstream                                        >,
R<InRecompute       , CheckpointForwardExit  , OutsideCheckpoint  , PopCheckpointFrame          , Upstream                                        >,
// §3.4 ARF_EXIT(fwd), pr3213: both flags restored from the frame, normal exit or exception
R<InOriginalForward , CheckpointForwardExit  , OutsideCheckpoint  , PopCheckpointFrame          , And_<Pr3213OrFp8sm, FramePrevOutside>                  >,
R<InOriginalForward , CheckpointForwardExit  , none               , PopCheckpointFrame          , And_<Pr3213OrFp8sm, FramePrevOriginal>                 >,
R<InOriginalForward , CheckpointForwardExit  , InRecompute        , PopCheckpointFrame          , And_<Pr3213OrFp8sm, FramePrevRecompute>                >,
// ----------------------------------------------------------------------------------------
// §3.4 ARF_ENTER(rc): region := phase := true (upstream before its pop can fail; pr3213 only
//      for a complete capture, else nothing changes)
R<OutsideCheckpoint , RecomputeEnter         , InRecompute        , PushCheckpointFrame         , EntersRecompute                                 >,
R<InOriginalForward , RecomputeEnter         , InRecompute        , PushCheckpointFrame         , EntersRecompute                                 >,
R<InRecompute       , RecomputeEnter         , none               , PushCheckpointFrame         , EntersRecompute                                 >,
// ----------------------------------------------------------------------------------------
// §3.4 ARF_EXIT(rc): upstream clears, pr3213 restores
R<InRecompute       , RecomputeExit          , OutsideCheckpoint  , PopCheckpointFrame          , Upstream                                        >,
R<OutsideCheckpoint , RecomputeExit          , none               , PopCheckpointFrame          , Upstream                                        >,
R<InRecompute       , RecomputeExit          , OutsideCheckpoint  , PopCheckpointFrame          , And_<Pr3213OrFp8sm, FramePrevOutside>                  >,
R<InRecompute       , RecomputeExit          , InOriginalForward  , PopCheckpointFrame          , And_<Pr3213OrFp8sm, FramePrevOriginal>                 >,
R<InRecompute       , RecomputeExit          , none               , PopCheckpointFrame          , And_<Pr3213OrFp8sm, FramePrevRecompute>                >,
// ----------------------------------------------------------------------------------------
// §3.2 prepare_forward, recompute branch (m.fp8 and phase): POP saves the live meta for the
//      restore, then popleft; a missing deque raises KeyError, an empty one IndexError
R<InRecompute       , ModulePrepare          , none               , Seq<SaveLiveMetaForRestore, RaiseMissingStashKey>, And_<NotFp8sm, And_<ModuleIsFp8, Not_<ModuleHasStashPos>>>                      >,
R<InRecompute       , ModulePrepare          , none               , Seq<SaveLiveMetaForRestore, RaiseEmptyStash>     , And_<NotFp8sm, And_<ModuleIsFp8, And_<ModuleHasStashPos, ModuleStashEmpty>>>       >,
R<InRecompute       , ModulePrepare          , none               , Seq<SaveLiveMetaForRestore, PopStash>            , And_<NotFp8sm, And_<ModuleIsFp8, And_<ModuleHasStashPos, Not_<ModuleStashEmpty>>>> >,
// §3.2 prepare_forward, normal branch: m.fp8 := fp8_enabled; REGISTER; STASH while
//      recompute_enabled() = region and fp8_enabled (so also inside a recompute)
R<InRecompute       , ModulePrepare          , none               , Seq<MarkModuleFp8, RegisterIfNew, StashLiveMeta> , And_<NotFp8sm, And_<Not_<ModuleIsFp8>, InFp8Autocast>>       >,
R<InRecompute       , ModulePrepare          , none               , MarkModuleNotFp8                                 , And_<NotFp8sm, And_<Not_<ModuleIsFp8>, Not_<InFp8Autocast>>> >,
R<InOriginalForward , ModulePrepare          , none               , Seq<MarkModuleFp8, RegisterIfNew, StashLiveMeta> , And_<NotFp8sm, InFp8Autocast>                                >,
R<InOriginalForward , ModulePrepare          , none               , MarkModuleNotFp8                                 , And_<NotFp8sm, Not_<InFp8Autocast>>                          >,
R<OutsideCheckpoint , ModulePrepare          , none               , Seq<MarkModuleFp8, RegisterIfNew>                , InFp8Autocast                                >,
R<OutsideCheckpoint , ModulePrepare          , none               , MarkModuleNotFp8                                 , Not_<InFp8Autocast>                          >,
// fp8sm prepare_forward: a recompute's k-th run of a module follows the original's k-th run
//      of it, recorded by its own checkpoint: FP8 with the stashed meta, or not FP8, whatever
//      m.fp8 says; a run the original did not make runs on live meta. Either way the live meta comes back at end_forward, so no recompute
//      amax reaches an update, and a recompute registers nothing (I9). Every open original
//      forward of the context stashes.
R<InRecompute       , ModulePrepare          , none               , Seq<MarkModuleFp8, SaveLiveMetaForReplay, ReplayStashedMeta>                      , And_<Fp8sm, And_<HasReplayEntry, ReplayEntryIsFp8>>             >,
R<InRecompute       , ModulePrepare          , none               , Seq<MarkModuleNotFp8, SkipReplayedRun>                                            , And_<Fp8sm, And_<HasReplayEntry, Not_<ReplayEntryIsFp8>>>       >,
R<InRecompute       , ModulePrepare          , none               , Seq<MarkModuleFp8, SaveLiveMetaForReplay>                                         , And_<Fp8sm, And_<Not_<HasReplayEntry>, InFp8Autocast>>           >,
R<InRecompute       , ModulePrepare          , none               , MarkModuleNotFp8                                                                  , And_<Fp8sm, And_<Not_<HasReplayEntry>, Not_<InFp8Autocast>>>     >,
R<InOriginalForward , ModulePrepare          , none               , Seq<MarkModuleFp8, SaveLiveMetaForReplay, ReplayStashedMeta, StashIntoCheckpoints>, And_<Fp8sm, And_<HasReplayEntry, ReplayEntryIsFp8>>             >,
R<InOriginalForward , ModulePrepare          , none               , Seq<MarkModuleNotFp8, SkipReplayedRun, StashIntoCheckpoints>                      , And_<Fp8sm, And_<HasReplayEntry, Not_<ReplayEntryIsFp8>>>       >,
R<InOriginalForward , ModulePrepare          , none               , Seq<MarkModuleFp8, SaveLiveMetaForReplay, StashIntoCheckpoints>                   , And_<Fp8sm, And_<And_<InReplay, Not_<HasReplayEntry>>, InFp8Autocast>> >,
R<InOriginalForward , ModulePrepare          , none               , Seq<MarkModuleFp8, RegisterIfNew, StashIntoCheckpoints>                           , And_<Fp8sm, And_<Not_<InReplay>, InFp8Autocast>>                  >,
R<InOriginalForward , ModulePrepare          , none               , Seq<MarkModuleNotFp8, StashIntoCheckpoints>                                       , And_<Fp8sm, And_<Not_<HasReplayEntry>, Not_<InFp8Autocast>>>     >,
// ----------------------------------------------------------------------------------------
// §3.2 end_forward (m.fp8 and phase): RESTORE live meta := m.updated (KeyError if never saved)
R<InRecompute       , ModuleEndForward       , none               , RestoreLiveMeta             , And_<NotFp8sm, And_<ModuleIsFp8, ModuleHasSavedMeta>>       >,
R<InRecompute       , ModuleEndForward       , none               , RaiseMissingSavedMeta       , And_<NotFp8sm, And_<ModuleIsFp8, Not_<ModuleHasSavedMeta>>> >,
// fp8sm end_forward: the live meta a recompute replaced comes back
R<InRecompute       , ModuleEndForward       , none               , RestoreAfterReplay          , And_<Fp8sm, RestorePending>                                 >,
R<InOriginalForward , ModuleEndForward       , none               , RestoreAfterReplay          , And_<Fp8sm, RestorePending>                                 >,
// ----------------------------------------------------------------------------------------
// fp8sm: a checkpoint that can never be recomputed again drops its stash
R<OutsideCheckpoint , CheckpointReleased     , none               , ReleaseCheckpointStash      , Fp8sm                                                       >,
R<InOriginalForward , CheckpointReleased     , none               , ReleaseCheckpointStash      , Fp8sm                                                       >,
R<InRecompute       , CheckpointReleased     , none               , ReleaseCheckpointStash      , Fp8sm                                                       >
>;

// ===== Region 2: autocast (depth, fp8_enabled) and region 3: grad mode ==================
using AutocastAndGradRows = mpl::vector<
//  Start              | Event                  | Next               | Action                      | Guard
// §3.1 AC_ENTER: fields := arguments; depth += 1
R<NoAutocast        , AutocastEnter          , Fp8Autocast        , PushAutocast                , EnablesFp8                                      >,
R<NoAutocast        , AutocastEnter          , NonFp8Autocast     , PushAutocast                , Not_<EnablesFp8>                                >,
R<Fp8Autocast       , AutocastEnter          , none               , PushAutocast                , EnablesFp8                                      >,
R<Fp8Autocast       , AutocastEnter          , NonFp8Autocast     , PushAutocast                , Not_<EnablesFp8>                                >,
R<NonFp8Autocast    , AutocastEnter          , Fp8Autocast        , PushAutocast                , EnablesFp8                                      >,
R<NonFp8Autocast    , AutocastEnter          , none               , PushAutocast                , Not_<EnablesFp8>                                >,
// ----------------------------------------------------------------------------------------
// §3.1 AC_EXIT: fields := snap; depth -= 1; leaving the outermost enabled autocast with grad
//      on makes the forward update (upstream also from a recompute's own autocast, pr3213 not)
R<Fp8Autocast       , AutocastExit           , NoAutocast         , PopAutocastAndUpdateForward , UpdatesForwardOnExit                            >,
R<Fp8Autocast       , AutocastExit           , NoAutocast         , PopAutocast                 , And_<RestoresNoAutocast, And_<Not_<UpdatesForwardOnExit>, Not_<DiscardsOnExit>>> >,
// fp8sm: leaving depth 0 without that update drops the region's amaxes (an enabled autocast
//      nested in a disabled one, or grad off): no later update may fold them (I5)
R<Fp8Autocast       , AutocastExit           , NoAutocast         , PopAutocastAndDiscardForwardAmax, And_<RestoresNoAutocast, And_<Not_<UpdatesForwardOnExit>, DiscardsOnExit>> >,
R<Fp8Autocast       , AutocastExit           , none               , PopAutocast                 , RestoresFp8                                     >,
R<Fp8Autocast       , AutocastExit           , NonFp8Autocast     , PopAutocast                 , RestoresNonFp8                                  >,
R<NonFp8Autocast    , AutocastExit           , NoAutocast         , PopAutocast                 , And_<RestoresNoAutocast, Not_<DiscardsOnExit>>  >,
R<NonFp8Autocast    , AutocastExit           , NoAutocast         , PopAutocastAndDiscardForwardAmax, And_<RestoresNoAutocast, DiscardsOnExit> >,
R<NonFp8Autocast    , AutocastExit           , Fp8Autocast        , PopAutocast                 , RestoresFp8                                     >,
R<NonFp8Autocast    , AutocastExit           , none               , PopAutocast                 , RestoresNonFp8                                  >,
// ----------------------------------------------------------------------------------------
// torch grad mode: no_grad / enable_grad, Function.forward, the backward engine
R<GradEnabled       , GradPush               , GradDisabled       , PushGrad                    , Not_<EnablesGrad>                               >,
R<GradEnabled       , GradPush               , none               , PushGrad                    , EnablesGrad                                     >,
R<GradDisabled      , GradPush               , GradEnabled        , PushGrad                    , EnablesGrad                                     >,
R<GradDisabled      , GradPush               , none               , PushGrad                    , Not_<EnablesGrad>                               >,
R<GradEnabled       , GradPop                , GradDisabled       , PopGrad                     , Not_<GradBeforeWasOn>                           >,
R<GradEnabled       , GradPop                , none               , PopGrad                     , GradBeforeWasOn                                 >,
R<GradDisabled      , GradPop                , GradEnabled        , PopGrad                     , GradBeforeWasOn                                 >,
R<GradDisabled      , GradPop                , none               , PopGrad                     , Not_<GradBeforeWasOn>                           >
>;
// clang-format on

// Boost.MPL's numbered vectors stop at 50 elements; appending grows them without a limit.
template <class Front, class Back>
using Concat = typename mpl::copy<Back, mpl::back_inserter<Front>>::type;
using AllRows = Concat<Concat<Concat<OwnershipRows, BackwardRows>, CheckpointRows>, AutocastAndGradRows>;

}  // namespace table

// The front-end: the table, the regions' initial states and where the machine's data is. One
// table for every storage of the data (statemachine/storage.hpp); the back-end is compiled once
// per storage (machine.cpp).
template <class S>
struct Fp8StateMachine : boost::msm::front::state_machine_def<Fp8StateMachine<S>> {
  typedef int no_exception_thrown;  // actions never throw: failures go to data.error
  typedef int no_message_queue;     // actions never fire events

  using initial_state = boost::mpl::vector<states::OwnershipConsumed, states::OutsideCheckpoint,
                                           states::NoAutocast, states::GradEnabled>;
  using transition_table = table::AllRows;

  // An event no row takes (e.g. a claim with grad off) changes nothing: that is the spec.
  template <class Fsm, class Event>
  void no_transition(const Event&, Fsm&, int) {}

  MachineData<S>& data() { return *data_; }
  const MachineData<S>& data() const { return *data_; }
  Hooks& hooks() { return *hooks_; }
  template <class Key>
  void count_row();  // the row `Key` was taken: counted and noted, as recording asks

  MachineData<S>* data_ = nullptr;  // the state the machine works on (owned or bound)
  Hooks* hooks_ = nullptr;
  std::vector<std::uint64_t>* coverage = nullptr;   // per row, when recording
  std::vector<std::uint16_t>* rows_taken = nullptr;  // each row taken, in order, when recording
};

}  // namespace fp8sm::statemachine
