// What still grows in a bounded search: the programs within resource bounds (--max-open-blocks,
// --max-live-nodes, the modules), breadth first as the explorer takes them, and per part of the
// state (each field of the machine, the interpreter, the driver, each observer) how many
// distinct values the states stored so far hold, layer by layer. A part whose count still
// rises at depth 8, 10, 12 is what keeps a search from its fixpoint; a part that has stopped
// is finite already (docs/explorer.md "Fixpoint").
//
//   bench/state_growth --depth 10 --max-open-blocks 1 --max-live-nodes 2 [--modules 1]
//                      [--semantics fp8sm] [--check I1,I4] [--show PART] [--exact] [--forgetting]
//                      [--forget-together PART,PART,...]
//
// The analysis is the model's (explorer/model/state_growth.hpp, which explorer --until-fixpoint
// runs when it finds no fixpoint); this prints its whole table. It keeps every state's path and
// replays it, as the explorer does; it is meant for layers of up to a few hundred thousand states.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "explorer/model/state_growth.hpp"
#include "explorer/search/search.hpp"
#include "spec/invariants.hpp"
#include "spec/semantics.hpp"
#include "statemachine/storage.hpp"

using fp8sm::explorer::kMaxFixpointDepth;

int main(int argc, char** argv) {
  CLI::App app{"what still grows in a bounded search, part by part"};
  int depth = 8;
  int open_blocks = 1;
  int live_nodes = 2;
  int modules = 1;
  std::string semantics_name = "fp8sm";
  std::string checks_text;
  std::string show;
  app.add_option("--show", show, "print the programs that give PART a new value in the last layer (up to 5)");
  bool forgetting = false;
  app.add_flag("--forgetting", forgetting,
               "also print, per part, the states that stay distinct with that part left out (what forgetting it could merge)");
  std::vector<std::string> forget_together;
  app.add_option("--forget-together", forget_together,
                 "also print, layer by layer, the states that stay distinct with all these parts left out at once")
      ->delimiter(',');
  bool exact = false;
  app.add_flag("--exact", exact, "without the abstractions of --until-fixpoint (model/abstractions.hpp)");
  app.add_option("--depth", depth, "layers")->check(CLI::Range(1, kMaxFixpointDepth));
  app.add_option("--max-open-blocks", open_blocks)->check(CLI::Range(1, 8));
  app.add_option("--max-live-nodes", live_nodes)->check(CLI::Range(1, 16));
  app.add_option("--modules", modules)->check(CLI::Range(1, 8));
  app.add_option("--semantics", semantics_name);
  app.add_option("--check", checks_text, "invariants, comma separated (default all)");
  CLI11_PARSE(app, argc, argv);

  const auto semantics = fp8sm::spec::parse_semantics(semantics_name);
  if (!semantics) {
    fmt::print(stderr, "state_growth: no semantics '{}'\n", semantics_name);
    return 2;
  }
  fp8sm::spec::InvariantSet checks;
  for (std::size_t at = 0; at < checks_text.size();) {
    const std::size_t comma = std::min(checks_text.find(',', at), checks_text.size());
    const auto invariant = fp8sm::spec::parse_invariant(checks_text.substr(at, comma - at));
    if (!invariant) {
      fmt::print(stderr, "state_growth: no invariant '{}'\n", checks_text.substr(at, comma - at));
      return 2;
    }
    checks.add(*invariant);
    at = comma + 1;
  }
  fp8sm::explorer::ModelSettings settings;
  settings.semantics = *semantics;
  settings.checks = checks;
  settings.alphabet.modules = modules;
  settings.alphabet.bounds.open_blocks = open_blocks;
  settings.alphabet.bounds.live_nodes = live_nodes;
  // As explorer --until-fixpoint runs the programs, unless --exact.
  if (!exact) settings.abstractions = fp8sm::explorer::Abstractions::sound();
  fp8sm::explorer::StateGrowthOptions options;
  options.depth = depth;
  options.examples_per_part = 5;
  options.forgetting = forgetting;
  options.forget_together = forget_together;
  fp8sm::explorer::StateGrowth growth;
  try {
    growth = fp8sm::explorer::measure_state_growth(settings, options);
  } catch (const fp8sm::statemachine::CapacityError& e) {
    fmt::print(stderr, "state_growth: {}\n", e.what());
    return 1;
  } catch (const std::invalid_argument& e) {
    fmt::print(stderr, "state_growth: {}\n", e.what());
    return 2;
  }
  fmt::print("{:<48}", "part \\ depth");
  for (int l = 1; l <= growth.layers(); ++l) fmt::print(" {:>8}", l);
  fmt::print("\n{:<48}", "states");
  for (std::size_t n : growth.states) fmt::print(" {:>8}", n);
  fmt::print("\n");
  for (const auto& [name, counts] : growth.part_values) {
    fmt::print("{:<48}", name);
    for (std::size_t n : counts) fmt::print(" {:>8}", n);
    fmt::print("\n");
  }
  if (forgetting) {
    fmt::print("\nstates distinct without the part (the last layer's, and the share of all the states they are)\n");
    std::vector<std::pair<std::size_t, std::string>> rows;
    for (const auto& [name, counts] : growth.distinct_without) rows.emplace_back(counts.back(), name);
    std::sort(rows.begin(), rows.end());
    for (const auto& [count, name] : rows) {
      fmt::print("{:<48} {:>10} {:>7.3f}\n", name, count, static_cast<double>(count) / static_cast<double>(growth.states.back()));
    }
  }
  if (!forget_together.empty()) {
    fmt::print("\n{:<48}", "states distinct without all of them");
    for (std::size_t n : growth.distinct_without_together) fmt::print(" {:>8}", n);
    fmt::print("\n{:<48}", "their share of the states");
    for (std::size_t l = 0; l < growth.states.size(); ++l) {
      fmt::print(" {:>8.3f}", static_cast<double>(growth.distinct_without_together[l]) / static_cast<double>(growth.states[l]));
    }
    fmt::print("\n");
  }
  if (!show.empty() && growth.examples.count(show) != 0) {
    for (const auto& example : growth.examples.at(show)) fmt::print("{} = {}\n{}\n", show, example.value_hex, example.program);
  }
  fmt::print("layer {}: {}\n", growth.layers(),
             growth.fixpoint ? "added no state (a fixpoint)" : fmt::format("{} states in all", growth.states.back()));
  return 0;
}
