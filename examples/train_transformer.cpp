// Trains a small decoder-only transformer in FP8 on the runtime's graph tape, on a task it makes
// itself (reverse or copy a random sequence), and prints per step the loss and the forward and
// backward update counts (1 and 1 under fp8sm, whatever the checkpointing).
//
//   train_transformer [--checkpoint none|reentrant|nonreentrant|nested] [--task reverse|copy]
//                     [--steps N] [--semantics fp8sm|upstream|pr3213]
//                     [--backend cpu|cuda|cuda-exact|cuda-emulated] [--width W] [--batch B]
//
// Sizes are decimal counts: --steps 1 to 1000000, --width 1 to 65536, --batch 1 to 16777216, and
// a width and batch whose estimated memory (examples/transformer.hpp) is more than this machine
// has are refused before anything is allocated.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <stdexcept>
#include <string>

#include "examples/count_option.hpp"
#include "examples/transformer.hpp"
#include "runtime/backends.hpp"

// Exit status: 0 trained, 1 training failed (e.g. the chosen GPU backend is not usable here),
// 2 bad options. Nothing is printed on standard output before the options are validated.
int main(int argc, char** argv) {
  CLI::App app{"train_transformer: a 2-block transformer trained in FP8 with the fp8sm runtime", "train_transformer"};
  std::string checkpoint = "none";
  std::string task = "reverse";
  std::string semantics = "fp8sm";
  fp8sm::examples::TransformerOptions options;
  std::string steps = std::to_string(options.steps), width = std::to_string(options.width),
              batch = std::to_string(options.batch);
  app.add_option("--checkpoint", checkpoint, "each block: none, reentrant, nonreentrant or nested (default none)");
  app.add_option("--task", task, "reverse or copy (default reverse)");
  app.add_option("--steps", steps, "training steps, 1 to 1000000 (default 200)");
  app.add_option("--semantics", semantics, "fp8sm, upstream or pr3213 (default fp8sm)");
  app.add_option("--backend", options.backend, "cpu, cuda, cuda-exact or cuda-emulated (default cpu)");
  app.add_option("--width", width, "embedding width, 1 to 65536 (default 64)");
  app.add_option("--batch", batch, "sequences a step, 1 to 16777216 (default 16)");
  app.footer("A width and batch whose estimated memory is more than this machine has are refused.\n"
             "Exit status: 0 trained, 1 training failed, 2 bad options.");
  try {
    app.parse(argc, argv);
    using fp8sm::examples::count_option;
    options.steps = static_cast<int>(count_option("--steps", steps, 1, 1'000'000));
    options.width = count_option("--width", width, 1, 65'536);
    options.batch = count_option("--batch", batch, 1, 16'777'216);
    options.checkpoint = fp8sm::examples::parse_block_checkpoint(checkpoint);
    if (task != "reverse" && task != "copy") throw std::invalid_argument(fmt::format("unknown task '{}' (expected reverse or copy)", task));
    options.reverse = task == "reverse";
    const auto parsed = fp8sm::spec::parse_semantics(semantics);
    if (!parsed) {
      throw std::invalid_argument(fmt::format("unknown semantics '{}' (expected fp8sm, upstream or pr3213)", semantics));
    }
    options.semantics = *parsed;
    fp8sm::examples::require_trainable(options);
    fp8sm::runtime::require_backend(options.backend);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    fmt::print(stderr, "train_transformer: error: {}\n", e.what());
    return 2;
  } catch (const std::invalid_argument& e) {
    fmt::print(stderr, "train_transformer: error: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {  // a backend this machine cannot run
    fmt::print(stderr, "train_transformer: error: {}\n", e.what());
    return 1;
  }
  try {
    fmt::print("step  loss  forward_updates  backward_updates\n");
    const auto result = fp8sm::examples::train_transformer(options, [](const fp8sm::examples::TransformerStep& r) {
      fmt::print("{}  {:.6f}  {}  {}\n", r.step, static_cast<double>(r.loss), r.counts.forward_updates,
                 r.counts.backward_updates);
      std::fflush(stdout);
    });
    fmt::print("loss {:.6f} -> {:.6f}\n", static_cast<double>(result.steps.front().loss),
               static_cast<double>(result.steps.back().loss));
  } catch (const std::exception& e) {
    std::fflush(stdout);
    fmt::print(stderr, "train_transformer: error: {}\n", e.what());
    return 1;
  }
  return 0;
}
