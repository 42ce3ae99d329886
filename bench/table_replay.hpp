// The state machine's own time inside a training step, for the benchmarks: one step's table
// events are logged, then replayed `replays` times on copies of the machine as it was before the
// step, without hooks (the table's work only); the copies alone are timed too and taken off.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <variant>
#include <vector>

#include "runtime/fp8sm_runtime.hpp"
#include "statemachine/machine.hpp"

namespace fp8sm::bench {

struct TableTime {
  std::size_t events = 0;   // fired by the step
  double ns_per_step = 0;   // the table's time for all of them
};

// Runs `step` once on `ctx` (logging its events) and times their replays.
inline TableTime time_table(runtime::Context& ctx, const std::function<void()>& step, int replays) {
  using Clock = std::chrono::steady_clock;
  const statemachine::Machine before(ctx.machine());
  std::vector<runtime::FiredEvent> events;
  ctx.log_events(&events);
  step();
  ctx.log_events(nullptr);
  const auto time_replays = [&](bool fire) {
    const auto start = Clock::now();
    for (int r = 0; r < replays; ++r) {
      statemachine::Machine m(before);
      m.set_hooks(nullptr);
      if (!fire) continue;
      for (const auto& e : events) std::visit([&m](const auto& event) { (void)m.fire(event); }, e.event);
    }
    return std::chrono::duration<double, std::nano>(Clock::now() - start).count();
  };
  const double ns = time_replays(true) - time_replays(false);
  return {events.size(), ns / replays};
}

}  // namespace fp8sm::bench
