// The back-end: one running instance of the transition table, behind a small interface that
// hides Boost.MSM from the rest of the project (it is compiled in machine.cpp only, once per
// storage of the data).
//
// A machine works on a MachineState (the region states and the data). It owns one (the
// runtime, `explorer run`, the tests), or is bound to one that lives elsewhere: the exhaustive
// search keeps its states as flat values and binds one machine per worker to whichever state
// it is expanding (bind() costs a pointer).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "spec/events.hpp"
#include "spec/semantics.hpp"
#include "spec/step_result.hpp"
#include "statemachine/encoder.hpp"
#include "statemachine/hooks.hpp"
#include "statemachine/machine_data.hpp"
#include "statemachine/row_catalogue.hpp"

namespace fp8sm::statemachine {

template <class S>
class BasicMachine {
 public:
  // A machine owning a fresh state. `hooks` must outlive the machine; nullptr means "report
  // nothing".
  explicit BasicMachine(spec::Semantics semantics, Hooks* hooks = nullptr);
  // A machine bound to `state` (see bind()).
  BasicMachine(MachineState<S>& state, Hooks* hooks);
  // A copy owns a copy of the other's state, with the same hooks.
  BasicMachine(const BasicMachine& other);
  // Copies the other's state into the state this machine works on; keeps its own hooks.
  BasicMachine& operator=(const BasicMachine& other);
  ~BasicMachine();

  // The state of a machine that has processed nothing.
  static MachineState<S> initial_state(spec::Semantics semantics);

  // From now on, every event reads and changes `state` (which must outlive the binding).
  void bind(MachineState<S>& state);
  MachineState<S>& state() { return *state_; }
  const MachineState<S>& state() const { return *state_; }

  // Fires one event through every region. Returns the exception TE would raise from inside the
  // operation (KeyError, IndexError, RuntimeError), if any; the state is then exactly what the
  // operation left behind before raising.
  template <class Event>
  std::optional<spec::RaisedException> fire(const Event& event);

  void set_hooks(Hooks* hooks);
  // Counts, per row of the table (RowCatalogue order), how often it is taken; nullptr stops.
  void record_coverage(std::vector<std::uint64_t>* counts);
  // Appends the row (RowCatalogue index) of each transition taken, in order, to `rows`
  // (nullptr stops): which guards held. The trace property compares them, runtime and model.
  void record_rows(std::vector<std::uint16_t>* rows);

  // Observation: what guards see.
  spec::Semantics semantics() const { return state_->data.semantics; }
  bool ownership_available() const;  // F
  CheckpointPhase checkpoint_phase() const;
  bool fp8_enabled() const;
  bool grad_enabled() const;
  // Whether a checkpoint called now runs its function as a plain call: no ARF, no capture, no
  // frame, no node (spec §3.5 "Dispatch": TE 2.20.2's `checkpoint()` with grad disabled).
  bool checkpoint_call_is_plain() const;
  // Whether a reentrant checkpoint that is no plain call, on an input that requires grad or
  // not (`input_requires_grad`), runs its forward without its ARF: no capture, no FIFO entry,
  // only its function under no-grad (spec §3.5 "Dispatch": TE 2.20.2's `any(needs_input_grad)`).
  bool reentrant_forward_skips_arf(bool input_requires_grad) const;
  int autocast_depth() const { return static_cast<int>(state_->data.autocasts.size()); }
  const MachineData<S>& data() const { return state_->data; }
  ModuleFlags module(ModuleId m) const { return state_->data.module_flags(m); }

  // The region states and the data, packed; equal snapshots mean equal futures.
  std::string snapshot() const;
  void encode(Encoder& out) const;  // the snapshot, ids as ids (see Encoder)
  // A 64-bit hash of snapshot() (XXH3).
  std::uint64_t fingerprint() const;

  // Every row of the table, in table order.
  static const RowCatalogue& rows();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  MachineState<S>* state_;
};

// The runtime's, `explorer run`'s and the tests' machine; and the exhaustive search's.
using Machine = BasicMachine<GrowableStorage>;
using FlatMachine = BasicMachine<FlatStorage>;

}  // namespace fp8sm::statemachine
