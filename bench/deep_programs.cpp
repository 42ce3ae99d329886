// What deep nesting costs `explorer run`: programs of the same number of statements whose
// blocks (autocast, try, no_grad) nest 10, 100 or 1000 deep (the language's limit), run on the
// model with the invariant checker; then checkpoints nested 16, 32 and 64 deep (the limit)
// with a backward, whose recomputes are the program's own work (a checkpoint k deep is
// recomputed by each of the k around it). Prints microseconds per statement: with nesting
// linear, the first three lines agree.
//
//   bench/deep_programs [--statements N] [--semantics fp8sm|upstream|pr3213]
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <iterator>
#include <string>

#include "explorer/scenario_run.hpp"
#include "spec/scenario_parser.hpp"

namespace {

using Clock = std::chrono::steady_clock;

// `repeats` times: `depth` nested blocks of the kinds in turn, a linear in each, then backward.
std::string nested_blocks(int depth, int repeats) {
  static const char* const kinds[] = {"autocast on {", "try {", "no_grad {", "autocast off {"};
  std::string text;
  for (int r = 0; r < repeats; ++r) {
    for (int i = 0; i < depth; ++i) fmt::format_to(std::back_inserter(text), "{}\nlinear L{}\n", kinds[i % 4], i % 3);
    for (int i = 0; i < depth; ++i) text += "}\n";
    text += "backward\n";
  }
  return text;
}

std::string nested_checkpoints(int depth) {
  std::string text = "autocast on {\n";
  for (int i = 0; i < depth; ++i) {
    fmt::format_to(std::back_inserter(text), "checkpoint {} {{\nlinear L{}\n", i % 2 == 0 ? "reentrant" : "nonreentrant",
                   i % 3);
  }
  for (int i = 0; i < depth; ++i) text += "}\n";
  return text + "}\nbackward\n";
}

void measure(const char* what, const std::string& text, fp8sm::spec::Semantics semantics) {
  const fp8sm::spec::Program program = fp8sm::spec::parse_scenario(text, what);
  const auto start = Clock::now();
  const auto report = fp8sm::explorer::run_scenario(program, semantics);
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  fmt::print("{:<28} {:9} statements  {:8.3f} s  {:7.3f} us/statement\n", what, program.statements.size(), seconds,
             1e6 * seconds / static_cast<double>(program.statements.size()));
  (void)report;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"deep_programs: what nesting costs explorer run"};
  int statements = 400000;
  std::string semantics = "fp8sm";
  app.add_option("--statements", statements, "statements per nested-block program (default 400000)");
  app.add_option("--semantics", semantics, "fp8sm, upstream or pr3213 (default fp8sm)");
  CLI11_PARSE(app, argc, argv);
  const auto parsed = fp8sm::spec::parse_semantics(semantics);
  if (!parsed || statements < 4000) {
    fmt::print(stderr, "deep_programs: error: unknown semantics or fewer than 4000 statements\n");
    return 2;
  }
  for (int depth : {10, 100, 1000}) {
    const std::string what = fmt::format("blocks {} deep", depth);
    measure(what.c_str(), nested_blocks(depth, statements / (3 * depth + 1)), *parsed);
  }
  for (int depth : {16, 32, 64}) {
    const std::string what = fmt::format("checkpoints {} deep", depth);
    measure(what.c_str(), nested_checkpoints(depth), *parsed);
  }
  return 0;
}
