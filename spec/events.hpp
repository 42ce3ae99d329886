// The events of the state machine: the fine-grained steps of spec §3. Composite operations (a
// checkpoint's forward, a recompute, a backward pass) are sequences of these, fired by the
// driver (driver/driver.hpp) for the scenario interpreter and the runtime alike.
#pragma once

#include <cstdint>
#include <variant>

namespace fp8sm::spec {

using ModuleId = std::uint16_t;
using CaptureId = std::uint32_t;  // one per checkpoint instance (spec §2.4: the capture record C)

// §3.1 AC_ENTER: a user autocast, or one opened by a recompute (recompute_internal).
struct AutocastEnter {
  bool enabled = true;
  bool recompute_internal = false;
};
// §3.1 AC_EXIT of the innermost autocast, normal or during unwinding (TE does not distinguish).
struct AutocastExit {};

// torch grad mode: no_grad / enable_grad, autograd Function.forward, the backward engine.
// `internal`: pushed by a checkpoint or the backward engine, not by the program itself.
struct GradPush {
  bool enabled = true;
  bool internal = false;
};
struct GradPop {};

// §3.4 ARF_ENTER(fwd): a checkpoint's original forward begins. `reentrant`: the reentrant
// checkpoint's (pr3213 reserves the bit there: nobody can claim under its no-grad forward).
struct CheckpointForwardEnter {
  CaptureId capture = 0;
  bool reentrant = false;
};
// §3.4 ARF_EXIT(fwd); `exceptional` when an exception unwinds through it.
struct CheckpointForwardExit {
  bool exceptional = false;
};
// §3.4 ARF_ENTER(rc) / ARF_EXIT(rc): a recompute of the checkpoint that captured `capture`.
struct RecomputeEnter {
  CaptureId capture = 0;
};
struct RecomputeExit {};

// §3.2 module forward, in its three table-visible parts: prepare_forward (branch, register,
// stash or pop), the ownership claim, and end_forward (restore).
struct ModulePrepare {
  ModuleId module = 0;
};
struct ModuleClaim {
  ModuleId module = 0;
};
struct ModuleEndForward {
  ModuleId module = 0;
};
// §3.3 a module node's backward begins, before it unpacks what it saved (TE's first line reads
// ctx.backward_objects, which a completed backward set to None); `ran_before`: this node's
// backward already completed once (the second backward of a retained graph).
struct ModuleBackwardBegin {
  ModuleId module = 0;
  bool ran_before = false;
};
// §3.5 a node unpacks what it saved through a non-reentrant frame's hook (after the recompute
// that unpack triggered, if any): `reached`: the frame's recompute saved this slot again;
// `taken`: an earlier unpack already took it (the second backward of a retained graph).
struct SavedTensorUnpack {
  bool reached = true;
  bool taken = false;
};
// §3.3 module backward ends; `owner` is the flag saved on the autograd node at its claim, `fp8`
// whether the module's meta is FP8 (its gradient casts are FP8 casts).
struct ModuleBackward {
  ModuleId module = 0;
  bool owner = false;
  bool fp8 = false;
};

// A backward pass begins / ends (`completed`: false when an exception left it). Only fp8sm
// acts on them: it makes the backward update at the end of the pass.
struct BackwardPassBegin {};
struct BackwardPassEnd {
  bool completed = true;
};

// The checkpoint that captured `capture` can never be recomputed again: its node was freed,
// discarded, or never recorded. Only fp8sm acts on it: it drops the checkpoint's stash.
struct CheckpointReleased {
  CaptureId capture = 0;
};

// Any one event, for observers that watch them all.
using AnyEvent = std::variant<AutocastEnter, AutocastExit, GradPush, GradPop, CheckpointForwardEnter,
                              CheckpointForwardExit, RecomputeEnter, RecomputeExit, ModulePrepare,
                              ModuleClaim, ModuleEndForward, ModuleBackwardBegin, SavedTensorUnpack,
                              ModuleBackward, BackwardPassBegin, BackwardPassEnd, CheckpointReleased>;

}  // namespace fp8sm::spec
