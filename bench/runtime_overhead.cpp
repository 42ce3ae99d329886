// What the state machine costs inside a training step of the runtime: the table events one step
// fires, the time the table takes for them (the step's events replayed on a copy of the
// machine, without hooks: only the table's own work), against the time of the whole step on the
// CPU backend. The target: under 1 microsecond per module per step.
//
//   bench/runtime_overhead [--layers N] [--width W] [--batch B] [--steps S] [--replays R]
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <variant>
#include <vector>

#include "runtime/fp8sm_runtime.hpp"
#include "statemachine/machine.hpp"

namespace {

using fp8sm::runtime::Matrix;
using Clock = std::chrono::steady_clock;

struct Figures {
  double events_per_step = 0;
  double ns_per_event = 0;
  double step_us = 0;
};

enum class Arrangement { None, ReentrantPerLayer, NonReentrantPerLayer };

Figures measure(Arrangement arrangement, int layers, std::size_t width, std::size_t batch, int steps, int replays) {
  namespace rt = fp8sm::runtime;
  rt::Recipe recipe;
  recipe.amax_history_len = 16;
  rt::Context ctx(recipe);
  std::vector<std::unique_ptr<rt::Linear>> modules;
  for (int i = 0; i < layers; ++i) {
    modules.push_back(std::make_unique<rt::Linear>(ctx, fmt::format("L{}", i), width, width, static_cast<std::uint64_t>(i)));
  }
  const Matrix x(batch, width, 0.125f);
  const Matrix grad(batch, width, 0.01f);
  auto step = [&] {
    {
      rt::Autocast fp8(ctx);
      Matrix h = x;
      for (auto& m : modules) {
        auto layer = [&m](const Matrix& in) { return m->forward(in); };
        switch (arrangement) {
          case Arrangement::None: h = layer(h); break;
          case Arrangement::ReentrantPerLayer: h = rt::checkpoint(ctx, rt::CheckpointMode::Reentrant, layer, h); break;
          case Arrangement::NonReentrantPerLayer: h = rt::checkpoint(ctx, rt::CheckpointMode::NonReentrant, layer, h); break;
        }
      }
    }
    ctx.backward(grad);
    ctx.end_step();
  };
  step();  // registration and first-use growth happen in the first step

  // The whole step.
  const auto start = Clock::now();
  for (int s = 0; s < steps; ++s) step();
  const double step_ns = std::chrono::duration<double, std::nano>(Clock::now() - start).count() / steps;

  // One step's events, replayed many times on copies of the machine as it was before them.
  const fp8sm::statemachine::Machine before(ctx.machine());
  std::vector<fp8sm::runtime::FiredEvent> events;
  ctx.log_events(&events);
  step();
  ctx.log_events(nullptr);
  // Each replay starts from a copy of `before`; the copies alone are timed too and taken off.
  auto time_replays = [&](bool fire) {
    const auto t0 = Clock::now();
    for (int r = 0; r < replays; ++r) {
      fp8sm::statemachine::Machine m(before);
      m.set_hooks(nullptr);
      if (!fire) continue;
      for (const auto& e : events) std::visit([&m](const auto& event) { (void)m.fire(event); }, e.event);
    }
    return std::chrono::duration<double, std::nano>(Clock::now() - t0).count();
  };
  const double replay_ns = time_replays(true) - time_replays(false);

  Figures f;
  f.events_per_step = static_cast<double>(events.size());
  f.ns_per_event = replay_ns / (static_cast<double>(replays) * static_cast<double>(events.size()));
  f.step_us = step_ns / 1000.0;
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"runtime_overhead: the state machine's cost inside a training step"};
  int layers = 8;
  std::size_t width = 64;
  std::size_t batch = 32;
  int steps = 50;
  int replays = 20000;
  app.add_option("--layers", layers, "Linear layers (default 8)");
  app.add_option("--width", width, "features per layer (default 64)");
  app.add_option("--batch", batch, "rows per step (default 32)");
  app.add_option("--steps", steps, "timed steps (default 50)");
  app.add_option("--replays", replays, "replays of one step's events on the bare machine (default 20000)");
  CLI11_PARSE(app, argc, argv);
  if (layers < 1 || width < 1 || batch < 1 || steps < 1 || replays < 1) {
    fmt::print(stderr, "runtime_overhead: error: every option must be 1 or more\n");
    return 2;
  }
  fmt::print("layers {}, width {}, batch {}, CPU backend, fp8sm\n", layers, width, batch);
  fmt::print("{:<24} {:>12} {:>10} {:>16} {:>18} {:>12} {:>10}\n", "checkpointing", "events/step", "ns/event",
             "machine us/step", "ns/module/step", "step us", "fraction");
  const struct {
    const char* name;
    Arrangement arrangement;
  } rows[] = {{"none", Arrangement::None},
              {"reentrant per layer", Arrangement::ReentrantPerLayer},
              {"non-reentrant per layer", Arrangement::NonReentrantPerLayer}};
  for (const auto& row : rows) {
    const Figures f = measure(row.arrangement, layers, width, batch, steps, replays);
    const double machine_ns = f.events_per_step * f.ns_per_event;
    fmt::print("{:<24} {:12.0f} {:10.1f} {:16.2f} {:18.1f} {:12.1f} {:9.4f}%\n", row.name, f.events_per_step,
               f.ns_per_event, machine_ns / 1000.0, machine_ns / layers, f.step_us,
               100.0 * machine_ns / (f.step_us * 1000.0));
  }
  return 0;
}
