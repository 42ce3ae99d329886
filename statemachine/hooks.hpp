// How the table's actions report what they did. The explorer counts and checks through it; the
// runtime turns the same calls into kernel launches and tensor copies. The machine keeps only
// control state (flags, counters, stack depths); every tensor value lives behind these hooks.
#pragma once

#include "spec/events.hpp"

namespace fp8sm::statemachine {

using spec::CaptureId;
using spec::ModuleId;

class Hooks {
 public:
  virtual ~Hooks() = default;
  // §3.6 reduce_and_update_fp8_tensors(forward=True / False).
  virtual void forward_update() {}
  virtual void backward_update() {}
  // fp8sm: a user autocast left depth 0 without a forward update: the current amax slot of
  // every forward meta is cleared, so no later update folds an amax of this region.
  virtual void discard_forward_amax() {}
  // §3.2 REGISTER: the module's amax row joins the registry (once, ever).
  virtual void registered(ModuleId) {}
  // §3.2 STASH: append a clone of the live forward meta to the module's deque.
  virtual void stash(ModuleId) {}
  // §3.2 POP, first half: m.updated := clone(live forward meta). Happens even when the pop fails.
  virtual void save_for_restore(ModuleId) {}
  // §3.2 POP, second half: live forward meta := popleft(deque).
  virtual void pop_stash(ModuleId) {}
  // §3.2 RESTORE: live forward meta := m.updated.
  virtual void restore(ModuleId) {}
  // fp8sm: the stash belongs to a checkpoint instance, not to a module's deque. `stash_for`
  // keeps a clone of the live forward meta for `capture`'s recomputes; `replay_stash` makes
  // the module's `occurrence`-th entry of `capture` its live meta (after save_for_restore);
  // `release_stash` drops what `capture` kept.
  virtual void stash_for(ModuleId, CaptureId) {}
  virtual void replay_stash(ModuleId, CaptureId, unsigned /*occurrence*/) {}
  virtual void release_stash(CaptureId) {}
  // §3.2 CLAIM: the autograd node being recorded owns the backward update or not.
  virtual void claimed(ModuleId, bool /*owner*/) {}
  // A checkpoint's ownership bit was captured (upstream: FIFO push; pr3213: record C) and, at a
  // recompute entry, installed again. Checkers use these to pair captures with recomputes.
  virtual void ownership_captured(CaptureId) {}
  virtual void ownership_installed(CaptureId) {}
};

}  // namespace fp8sm::statemachine
