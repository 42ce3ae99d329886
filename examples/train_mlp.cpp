// Trains a small MLP regression in FP8 on the runtime and prints, per step, the loss and the
// forward and backward update counts (1 and 1 under fp8sm, whatever the checkpointing).
//
//   train_mlp [--checkpoint none|reentrant|nonreentrant] [--granularity single|per-layer|nested]
//             [--steps N] [--semantics fp8sm|upstream|pr3213] [--backend cpu|cuda|cuda-exact|cuda-emulated]
//
// --granularity says where the checkpoints go: with --checkpoint none it is refused, not ignored.
// --steps is a decimal count, 1 to 1000000.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <stdexcept>
#include <string>

#include "examples/count_option.hpp"
#include "examples/mlp.hpp"
#include "runtime/backends.hpp"

// Exit status: 0 trained, 1 training failed (e.g. the chosen GPU backend is not usable here),
// 2 bad options. Nothing is printed on standard output before the options are validated.
int main(int argc, char** argv) {
  CLI::App app{"train_mlp: a small MLP regression trained in FP8 with the fp8sm runtime", "train_mlp"};
  std::string checkpoint = "none";
  std::string granularity = "single";
  std::string semantics = "fp8sm";
  fp8sm::examples::MlpOptions options;
  std::string steps = std::to_string(options.steps);
  app.add_option("--checkpoint", checkpoint, "none, reentrant or nonreentrant (default none)");
  const CLI::Option* granularity_given =
      app.add_option("--granularity", granularity, "with a checkpoint: single, per-layer or nested (default single)");
  app.add_option("--steps", steps, "training steps, 1 to 1000000 (default 300)");
  app.add_option("--semantics", semantics, "fp8sm, upstream or pr3213 (default fp8sm)");
  app.add_option("--backend", options.backend, "cpu, cuda, cuda-exact or cuda-emulated (default cpu)");
  try {
    app.parse(argc, argv);
    options.checkpoint = fp8sm::examples::parse_checkpoint(checkpoint);
    options.granularity = fp8sm::examples::parse_granularity(granularity);
    if (granularity_given->count() > 0 && options.checkpoint == fp8sm::examples::CheckpointKind::None) {
      throw std::invalid_argument("--granularity places checkpoints: give --checkpoint reentrant or nonreentrant with it");
    }
    options.steps = static_cast<int>(fp8sm::examples::count_option("--steps", steps, 1, 1'000'000));
    const auto parsed = fp8sm::spec::parse_semantics(semantics);
    if (!parsed) {
      throw std::invalid_argument(fmt::format("unknown semantics '{}' (expected fp8sm, upstream or pr3213)", semantics));
    }
    options.semantics = *parsed;
    fp8sm::runtime::require_backend(options.backend);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    fmt::print(stderr, "train_mlp: error: {}\n", e.what());
    return 2;
  } catch (const std::invalid_argument& e) {
    fmt::print(stderr, "train_mlp: error: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {  // a backend this machine cannot run
    fmt::print(stderr, "train_mlp: error: {}\n", e.what());
    return 1;
  }
  try {
    fmt::print("step  loss  forward_updates  backward_updates\n");
    const auto result = fp8sm::examples::train_mlp(options, [](const fp8sm::examples::StepReport& r) {
      fmt::print("{}  {:.6f}  {}  {}\n", r.step, static_cast<double>(r.loss), r.counts.forward_updates, r.counts.backward_updates);
    });
    const auto& first = result.steps.front();
    const auto& last = result.steps.back();
    fmt::print("loss {:.6f} -> {:.6f}\n", static_cast<double>(first.loss), static_cast<double>(last.loss));
  } catch (const std::exception& e) {
    std::fflush(stdout);
    fmt::print(stderr, "train_mlp: error: {}\n", e.what());
    return 1;
  }
  return 0;
}
