// What still grows in a bounded search: the programs within resource bounds (--max-open-blocks,
// --max-live-nodes, the modules), breadth first as the explorer takes them, and per part of the
// state (each field of the machine, the interpreter, the driver, each observer) how many
// distinct values the states stored so far hold, layer by layer. A part whose count still
// rises at depth 8, 10, 12 is what keeps a search from its fixpoint; a part that has stopped
// is finite already (docs/explorer.md "Fixpoint").
//
//   bench/state_growth --depth 10 --max-open-blocks 1 --max-live-nodes 2 [--modules 1]
//                      [--semantics fp8sm] [--check I1,I4] [--show PART] [--exact]
//
// It keeps every state's path and replays it, as the explorer does; it is meant for layers of
// up to a few hundred thousand states.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <xxhash.h>

#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_set>
#include <vector>

#include "explorer/model/alphabet.hpp"
#include "explorer/model/model_state.hpp"
#include "explorer/model/resource_bounds.hpp"
#include "explorer/search/search.hpp"
#include "spec/invariants.hpp"
#include "spec/scenario_parser.hpp"
#include "spec/semantics.hpp"

namespace {

using fp8sm::explorer::Fingerprint;
using fp8sm::explorer::FingerprintHash;
using fp8sm::explorer::kMaxFixpointDepth;
using fp8sm::explorer::ModelRunner;
using fp8sm::explorer::ModelState;
using fp8sm::spec::Statement;

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"what still grows in a bounded search, part by part"};
  int depth = 8;
  int open_blocks = 1;
  int live_nodes = 2;
  int modules = 1;
  std::string semantics_name = "fp8sm";
  std::string checks_text;
  std::string show;
  app.add_option("--show", show, "print the programs that give PART a new value in the last layer (a few)");
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
  fp8sm::explorer::AlphabetOptions alphabet;
  alphabet.modules = modules;
  alphabet.bounds.open_blocks = open_blocks;
  alphabet.bounds.live_nodes = live_nodes;

  // As explorer --until-fixpoint runs the programs, unless --exact.
  ModelRunner runner(*semantics, checks, true,
                     exact ? fp8sm::explorer::Abstractions{} : fp8sm::explorer::Abstractions::sound());
  auto root = std::make_unique<ModelState>();
  auto parent = std::make_unique<ModelState>();
  auto child = std::make_unique<ModelState>();
  runner.initial(*root);
  std::unordered_set<Fingerprint, FingerprintHash> seen = {runner.fingerprint(*root)};
  std::vector<std::vector<Statement>> frontier = {{}};
  // Per part of the canonical bytes (ModelRunner::canonical_parts), by name: the values seen.
  std::map<std::string, std::set<std::uint64_t>> distinct;
  int layer_now = 0;
  int shown = 0;
  auto count_parts = [&](const ModelState& state, const std::vector<Statement>& path) {
    for (const auto& [name, bytes] : runner.canonical_parts(state)) {
      const bool added = distinct[name].insert(XXH64(bytes.data(), bytes.size(), 0)).second;
      if (added && name == show && layer_now == depth && shown < 5) {
        ++shown;
        std::string hex;
        for (unsigned char c : bytes) hex += fmt::format("{:02x}", c);
        fmt::print("{} = {}\n{}\n", name, hex,
                   fp8sm::spec::print_scenario_one_line(fp8sm::explorer::program_of(path, alphabet)));
      }
    }
  };
  count_parts(*root, {});
  std::vector<std::map<std::string, std::size_t>> table;  // per layer, per part
  std::vector<std::size_t> states;
  std::vector<Statement> next;
  for (int layer = 1; layer <= depth && !frontier.empty(); ++layer) {
    layer_now = layer;
    std::vector<std::vector<Statement>> added;
    for (const std::vector<Statement>& path : frontier) {
      runner.copy(*parent, *root);
      for (const Statement& s : path) runner.apply(*parent, s);
      fp8sm::explorer::next_statements(parent->facts, alphabet, next);
      for (const Statement& first : next) {
        runner.copy(*child, *parent);
        std::vector<Statement> chain = {first};
        std::vector<std::pair<std::vector<Statement>, Fingerprint>> links;
        bool within = true;
        for (Statement via = first;;) {
          try {
            runner.apply(*child, via);
          } catch (const fp8sm::statemachine::CapacityError& e) {
            std::vector<Statement> at = path;
            at.insert(at.end(), chain.begin(), chain.end());
            fmt::print(stderr, "state_growth: {} after\n{}\n", e.what(),
                       fp8sm::spec::print_scenario_one_line(fp8sm::explorer::program_of(at, alphabet)));
            return 1;
          }
          if (!fp8sm::explorer::within_bounds(*child, alphabet.bounds)) {
            within = false;
            break;
          }
          std::vector<Statement> at = path;
          at.insert(at.end(), chain.begin(), chain.end());
          count_parts(*child, at);
          links.emplace_back(at, runner.fingerprint(*child));
          if (child->facts.open.empty()) break;
          via = fp8sm::explorer::close_statement();
          chain.push_back(via);
        }
        if (!within) continue;
        for (auto& [at, fingerprint] : links) {
          if (seen.insert(fingerprint).second) added.push_back(std::move(at));
        }
      }
    }
    frontier = std::move(added);
    states.push_back(seen.size());
    std::map<std::string, std::size_t> row;
    for (const auto& [name, values] : distinct) row[name] = values.size();
    table.push_back(row);
    fmt::print(stderr, "layer {}: {} new, {} in all\n", layer, frontier.size(), seen.size());
  }
  fmt::print("{:<48}", "part \\ depth");
  for (std::size_t l = 0; l < table.size(); ++l) fmt::print(" {:>8}", l + 1);
  fmt::print("\n{:<48}", "states");
  for (std::size_t s : states) fmt::print(" {:>8}", s);
  fmt::print("\n");
  for (const auto& [name, values] : distinct) {
    fmt::print("{:<48}", name);
    for (const auto& row : table) fmt::print(" {:>8}", row.count(name) != 0 ? row.at(name) : 0);
    fmt::print("\n");
  }
  fmt::print("frontier {}: {}\n", depth, frontier.empty() ? "empty (a fixpoint)" : fmt::format("{} states", frontier.size()));
  return 0;
}
