// What the interpreter tells a checker beyond the table's own hooks: where the program is
// (steps, backward passes, checkpoint and recompute extents), what the autograd tape holds,
// and which exceptions escaped. The explorer's invariant observers implement it; they read
// the machine they watch through the machine itself, which their owner hands them.
#pragma once

#include <cstdint>
#include <optional>

#include "spec/step_result.hpp"
#include "statemachine/hooks.hpp"

namespace fp8sm::statemachine {

using NodeId = std::uint32_t;

class Observer : public Hooks {
 public:
  virtual void step_begin(int /*step*/) {}
  virtual void step_end(int /*step*/) {}
  // After a statement at top level (no block open, no recompute running) finished or raised.
  virtual void top_level_statement_done() {}
  virtual void exception_escaped(const spec::RaisedException&) {}

  // After every table event; `raised` is what the event raised, if anything.
  virtual void event_fired(const spec::AnyEvent& /*event*/,
                           const std::optional<spec::RaisedException>& /*raised*/) {}
  // An autocast exit is about to fire / has fired (`user`: false for a recompute's own).
  virtual void autocast_exit_begin(bool /*user*/) {}
  virtual void autocast_exit_end() {}

  // A module's casts ran (after prepare_forward): they read the live forward meta and
  // accumulate into its current amax slot. `recompute`: some recompute is in progress.
  virtual void module_computed(ModuleId, bool /*recompute*/) {}
  // An autograd node was recorded; `live` is false when its graph is never backpropagated.
  virtual void node_recorded(NodeId, ModuleId, bool /*owner*/, bool /*live*/) {}
  // A node dropped unused: it will never be backpropagated (a `try` caught an exception, an
  // exception ended the step, `data` restarted the chain) and its backward never ran.
  virtual void node_discarded(NodeId) {}

  virtual void backward_pass_begin() {}
  virtual void backward_pass_end(bool /*completed*/) {}
  // A module backward is about to run; its gradient casts accumulate into the backward meta.
  virtual void module_backward(ModuleId, bool /*fp8*/) {}

  // Extents: a checkpoint's original forward, and a recompute (entry succeeded).
  virtual void checkpoint_forward_begin(CaptureId) {}
  virtual void checkpoint_forward_end(CaptureId, bool /*exceptional*/) {}
  virtual void recompute_begin(CaptureId) {}
  virtual void recompute_end(CaptureId) {}
  // The checkpoint can never be recomputed again (its node was freed, discarded, or never
  // recorded); the CheckpointReleased event follows.
  virtual void checkpoint_dropped(CaptureId) {}
};

}  // namespace fp8sm::statemachine
