// What every invariant observer works with: the machine it watches (read only: its region
// states and a module's fp8 flag, never its data) and where its violations go.
#pragma once

#include <cstdint>
#include <string_view>

#include "explorer/model/verdict.hpp"
#include "statemachine/machine.hpp"

namespace fp8sm::explorer {

using spec::CaptureId;
using spec::ModuleId;

template <class S>
struct ObserverContext {
  const statemachine::BasicMachine<S>* machine = nullptr;
  Verdict* verdict = nullptr;

  void violate(spec::Invariant invariant, Reason reason, std::uint64_t a = 0, std::uint64_t b = 0,
               std::uint64_t c = 0, std::uint64_t d = 0, std::string_view text = {}) const {
    Violation v;
    v.invariant = invariant;
    v.reason = reason;
    v.a = static_cast<std::uint16_t>(a);
    v.b = static_cast<std::uint16_t>(b);
    v.c = static_cast<std::uint16_t>(c);
    v.d = static_cast<std::uint16_t>(d);
    v.text = text;
    verdict->add(v);
  }
};

}  // namespace fp8sm::explorer
