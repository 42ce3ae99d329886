// The back-end: one running instance of the transition table, behind a small interface that
// hides Boost.MSM from the rest of the project (it is compiled in machine.cpp only).
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

class Machine {
 public:
  // `hooks` must outlive the machine; nullptr means "report nothing".
  explicit Machine(spec::Semantics semantics, Hooks* hooks = nullptr);
  Machine(const Machine& other);
  Machine& operator=(const Machine& other);
  ~Machine();

  // Fires one event through every region. Returns the exception TE would raise from inside the
  // operation (KeyError, IndexError, RuntimeError), if any; the state is then exactly what the
  // operation left behind before raising.
  template <class Event>
  std::optional<spec::RaisedException> fire(const Event& event);

  void set_hooks(Hooks* hooks);
  // Counts, per row of the table (RowCatalogue order), how often it is taken; nullptr stops.
  void record_coverage(std::vector<std::uint64_t>* counts);

  // Observation: what guards see.
  spec::Semantics semantics() const;
  bool ownership_available() const;  // F
  CheckpointPhase checkpoint_phase() const;
  bool fp8_enabled() const;
  bool grad_enabled() const;
  // Whether a checkpoint called now runs its function as a plain call: no ARF, no capture, no
  // frame, no node (spec §3.5 "Dispatch": TE 2.20.2's `checkpoint()` with grad disabled).
  bool checkpoint_call_is_plain() const;
  int autocast_depth() const;
  const MachineData& data() const;
  ModuleFlags module(ModuleId m) const;

  // The region states and the data, packed; equal snapshots mean equal futures.
  std::string snapshot() const;
  void encode(Encoder& out) const;  // the snapshot, ids as ids (see Encoder)
  // A 64-bit hash of snapshot() (XXH3), for seen-sets that store fingerprints.
  std::uint64_t fingerprint() const;

  // Every row of the table, in table order.
  static const RowCatalogue& rows();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fp8sm::statemachine
