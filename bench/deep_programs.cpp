// What deep nesting and long programs cost `explorer run`, run on the model with the invariant
// checker:
//  - programs of the same number of statements whose blocks (autocast, try, no_grad) nest 10,
//    100 or 1000 deep (the language's limit): microseconds per statement, which agree when
//    nesting costs nothing;
//  - checkpoints nested 16, 32 and 64 deep (the limit) around one linear each, with a backward,
//    whose recomputes are the program's own work (a checkpoint k deep is recomputed by each of
//    the k around it);
//  - long programs: one checkpoint (reentrant, then non-reentrant) around N linears, and 64
//    nested checkpoints (reentrant, non-reentrant, alternating) around N linears, each with a
//    backward, whose recomputes replay the N runs: microseconds per linear, constant when the
//    cost is linear in N (docs/performance.md, "Long programs").
//
//   bench/deep_programs [--statements N] [--semantics fp8sm|upstream|pr3213] [--only GROUP]
//   bench/deep_programs --write-scenarios DIR   # the long programs as DIR/*.scn, for explorer run
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "explorer/model/scenario_run.hpp"
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

// `depth` checkpoints nested in an FP8 autocast around `linears` linears (three modules in
// turn), then a backward. `kind`: reentrant, nonreentrant, or alternating (reentrant outermost).
std::string checkpoints_around(const std::string& kind, int depth, int linears) {
  std::string text = "autocast on {\n";
  for (int i = 0; i < depth; ++i) {
    const bool reentrant = kind == "reentrant" || (kind == "alternating" && i % 2 == 0);
    text += reentrant ? "checkpoint reentrant {\n" : "checkpoint nonreentrant {\n";
  }
  for (int i = 0; i < linears; ++i) fmt::format_to(std::back_inserter(text), "linear L{}\n", i % 3);
  for (int i = 0; i < depth; ++i) text += "}\n";
  return text + "}\nbackward\n";
}

struct LongProgram {
  std::string name;  // also its file name, with .scn
  std::string text;
  int linears = 0;
};

// One checkpoint around 5k to 100k linears, and 64 nested ones around 2.5k to 10k.
std::vector<LongProgram> long_programs() {
  std::vector<LongProgram> programs;
  for (const char* kind : {"reentrant", "nonreentrant"}) {
    for (int linears : {5000, 10000, 20000, 50000, 100000}) {
      programs.push_back({fmt::format("{}-1-{}", kind, linears), checkpoints_around(kind, 1, linears), linears});
    }
  }
  for (const char* kind : {"reentrant", "nonreentrant", "alternating"}) {
    for (int linears : {2500, 5000, 10000}) {
      programs.push_back({fmt::format("{}-64-{}", kind, linears), checkpoints_around(kind, 64, linears), linears});
    }
  }
  return programs;
}

double seconds_to_run(const fp8sm::spec::Program& program, fp8sm::spec::Semantics semantics) {
  const auto start = Clock::now();
  const auto report = fp8sm::explorer::run_scenario(program, semantics);
  (void)report;
  return std::chrono::duration<double>(Clock::now() - start).count();
}

void measure(const char* what, const std::string& text, fp8sm::spec::Semantics semantics) {
  const fp8sm::spec::Program program = fp8sm::spec::parse_scenario(text, what);
  const double seconds = seconds_to_run(program, semantics);
  fmt::print("{:<28} {:9} statements  {:8.3f} s  {:7.3f} us/statement\n", what, program.statements.size(), seconds,
             1e6 * seconds / static_cast<double>(program.statements.size()));
}

void measure_long(const LongProgram& p, fp8sm::spec::Semantics semantics) {
  const fp8sm::spec::Program program = fp8sm::spec::parse_scenario(p.text, p.name);
  const double seconds = seconds_to_run(program, semantics);
  fmt::print("{:<28} {:9} linears     {:8.3f} s  {:7.3f} us/linear\n", p.name, p.linears, seconds,
             1e6 * seconds / static_cast<double>(p.linears));
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"deep_programs: what nesting and long programs cost explorer run"};
  int statements = 400000;
  std::string semantics = "fp8sm";
  std::string only;
  std::string scenario_dir;
  app.add_option("--statements", statements, "statements per nested-block program (default 400000)");
  app.add_option("--semantics", semantics, "fp8sm, upstream or pr3213 (default fp8sm)");
  app.add_option("--only", only, "one group: blocks, checkpoints or long (default: all)")
      ->check(CLI::IsMember({"blocks", "checkpoints", "long"}));
  app.add_option("--write-scenarios", scenario_dir, "write the long programs to DIR/NAME.scn and run nothing");
  CLI11_PARSE(app, argc, argv);
  if (!scenario_dir.empty()) {
    for (const LongProgram& p : long_programs()) {
      const std::string path = scenario_dir + "/" + p.name + ".scn";
      std::ofstream out(path);
      out << p.text;
      if (!out.flush()) {
        fmt::print(stderr, "deep_programs: error: cannot write '{}'\n", path);
        return 2;
      }
    }
    return 0;
  }
  const auto parsed = fp8sm::spec::parse_semantics(semantics);
  if (!parsed || statements < 4000) {
    fmt::print(stderr, "deep_programs: error: unknown semantics or fewer than 4000 statements\n");
    return 2;
  }
  if (only.empty() || only == "blocks") {
    for (int depth : {10, 100, 1000}) {
      const std::string what = fmt::format("blocks {} deep", depth);
      measure(what.c_str(), nested_blocks(depth, statements / (3 * depth + 1)), *parsed);
    }
  }
  if (only.empty() || only == "checkpoints") {
    for (int depth : {16, 32, 64}) {
      const std::string what = fmt::format("checkpoints {} deep", depth);
      measure(what.c_str(), nested_checkpoints(depth), *parsed);
    }
  }
  if (only.empty() || only == "long") {
    for (const LongProgram& p : long_programs()) measure_long(p, *parsed);
  }
  return 0;
}
