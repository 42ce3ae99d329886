// What the state machine costs inside a training step of the runtime: the table events one step
// fires, the time the table takes for them (the step's events replayed on a copy of the
// machine, without hooks: only the table's own work), against the time of the whole step on the
// CPU backend. Two networks: a stack of FP8 Linears (a checkpoint per layer, or none), and the
// example transformer (examples/transformer.hpp: every checkpointing of its blocks).
//
//   bench/runtime_overhead [--layers N] [--width W] [--batch B] [--steps S] [--replays R]
//                          [--transformer-width W] [--transformer-batch B] [--network stack|transformer|both]
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <memory>
#include <variant>
#include <vector>

#include "examples/transformer.hpp"
#include "runtime/fp8sm_runtime.hpp"
#include "bench/table_replay.hpp"

namespace {

using fp8sm::runtime::Matrix;
using Clock = std::chrono::steady_clock;

struct Figures {
  double events_per_step = 0;
  double ns_per_event = 0;
  double step_us = 0;
};

// The table's time for one step's events (table_replay.hpp), and the whole step's time, over `steps` steps after a first (registration and
// first-use growth happen in the first step).
Figures measure(fp8sm::runtime::Context& ctx, const std::function<void()>& step, int steps, int replays) {
  step();
  const auto start = Clock::now();
  for (int s = 0; s < steps; ++s) step();
  const double step_ns = std::chrono::duration<double, std::nano>(Clock::now() - start).count() / steps;

  const fp8sm::bench::TableTime table = fp8sm::bench::time_table(ctx, step, replays);

  Figures f;
  f.events_per_step = static_cast<double>(table.events);
  f.ns_per_event = table.ns_per_step / static_cast<double>(table.events);
  f.step_us = step_ns / 1000.0;
  return f;
}

void print_header(const char* title) {
  fmt::print("{}\n", title);
  fmt::print("{:<24} {:>12} {:>10} {:>16} {:>18} {:>12} {:>10}\n", "checkpointing", "events/step", "ns/event",
             "machine us/step", "ns/module/step", "step us", "fraction");
}

void print_row(const char* name, const Figures& f, std::size_t modules) {
  const double machine_ns = f.events_per_step * f.ns_per_event;
  fmt::print("{:<24} {:12.0f} {:10.1f} {:16.2f} {:18.1f} {:12.1f} {:9.4f}%\n", name, f.events_per_step, f.ns_per_event,
             machine_ns / 1000.0, machine_ns / static_cast<double>(modules), f.step_us,
             100.0 * machine_ns / (f.step_us * 1000.0));
}

// ---- a stack of FP8 Linears ----------------------------------------------------------------------

enum class Arrangement { None, ReentrantPerLayer, NonReentrantPerLayer };

Figures measure_stack(Arrangement arrangement, int layers, std::size_t width, std::size_t batch, int steps, int replays) {
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
  return measure(ctx, step, steps, replays);
}

void run_stack(int layers, std::size_t width, std::size_t batch, int steps, int replays) {
  print_header(fmt::format("A stack of FP8 Linears: layers {}, width {}, batch {}, CPU backend, fp8sm", layers, width, batch).c_str());
  const struct {
    const char* name;
    Arrangement arrangement;
  } rows[] = {{"none", Arrangement::None},
              {"reentrant per layer", Arrangement::ReentrantPerLayer},
              {"non-reentrant per layer", Arrangement::NonReentrantPerLayer}};
  for (const auto& row : rows) {
    print_row(row.name, measure_stack(row.arrangement, layers, width, batch, steps, replays), static_cast<std::size_t>(layers));
  }
}

// ---- the example transformer ---------------------------------------------------------------------

void run_transformer(std::size_t width, std::size_t batch, int steps, int replays) {
  namespace ex = fp8sm::examples;
  ex::TransformerOptions options;
  options.width = width;
  options.batch = batch;
  options.steps = steps + 2;
  print_header(fmt::format("The example transformer: {} blocks, width {}, batch {} sequences of {} tokens, CPU backend, fp8sm",
                           options.blocks, width, batch, 2 * options.length)
                   .c_str());
  const struct {
    const char* name;
    ex::BlockCheckpoint checkpoint;
  } rows[] = {{"none", ex::BlockCheckpoint::None},
              {"reentrant per block", ex::BlockCheckpoint::Reentrant},
              {"non-reentrant per block", ex::BlockCheckpoint::NonReentrant},
              {"nested per block", ex::BlockCheckpoint::Nested}};
  for (const auto& row : rows) {
    options.checkpoint = row.checkpoint;
    ex::TransformerTraining training(options);
    const Figures f = measure(training.context(), [&training] { (void)training.step(); }, steps, replays);
    print_row(row.name, f, training.fp8_modules());
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"runtime_overhead: the state machine's cost inside a training step"};
  int layers = 8;
  std::size_t width = 64;
  std::size_t batch = 32;
  std::size_t transformer_width = 64;
  std::size_t transformer_batch = 16;
  int steps = 50;
  int replays = 20000;
  std::string network = "both";
  app.add_option("--layers", layers, "the stack's Linear layers (default 8)");
  app.add_option("--width", width, "the stack's features per layer (default 64)");
  app.add_option("--batch", batch, "the stack's rows per step (default 32)");
  app.add_option("--transformer-width", transformer_width, "the transformer's embedding width (default 64)");
  app.add_option("--transformer-batch", transformer_batch, "the transformer's sequences per step (default 16)");
  app.add_option("--steps", steps, "timed steps (default 50)");
  app.add_option("--replays", replays, "replays of one step's events on the bare machine (default 20000)");
  app.add_option("--network", network, "stack, transformer or both (default both)")
      ->check(CLI::IsMember({"stack", "transformer", "both"}));
  CLI11_PARSE(app, argc, argv);
  if (layers < 1 || width < 1 || batch < 1 || transformer_width < 1 || transformer_batch < 1 || steps < 1 || replays < 1) {
    fmt::print(stderr, "runtime_overhead: error: every option must be 1 or more\n");
    return 2;
  }
  if (network != "transformer") run_stack(layers, width, batch, steps, replays);
  if (network == "both") fmt::print("\n");
  if (network != "stack") run_transformer(transformer_width, transformer_batch, steps, replays);
  return 0;
}
