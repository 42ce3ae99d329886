// explorer: runs scenarios on the model of TE's FP8 ownership / autocast / checkpoint state
// and checks the invariants of spec §5.
//
//   explorer --depth N [--semantics fp8sm|upstream|pr3213] [--modules K] [--check I1,I4] [--threads T]
//            [--max-states M] [--max-memory BYTES[K|M|G]] [--no-symmetry] [--no-canonical-ids] [--json]
//                                        every program of up to N statements
//   explorer run FILE|NAME [--semantics fp8sm|upstream|pr3213] [--json]
//   explorer catalogue [--semantics S]   every built-in scenario, all semantics by default
//   explorer list                        the built-in catalogue
//   explorer invariants                  the invariants, one line each
//   explorer table                       the transition table, one row a line
//
// Exit status: 0 no invariant violated, 1 some violated, 2 bad usage or bad input.
#include <CLI/CLI.hpp>

#include <unistd.h>

#include <cctype>
#include <cstdint>
#include <fstream>
#include <limits>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>

#include "explorer/report.hpp"
#include "explorer/scenario_run.hpp"
#include "explorer/search.hpp"
#include "explorer/search_report.hpp"
#include "spec/catalogue.hpp"
#include "spec/invariants.hpp"
#include "spec/scenario_parser.hpp"
#include "spec/semantics.hpp"
#include "statemachine/machine.hpp"

namespace {

using namespace fp8sm;

constexpr int kClean = 0;
constexpr int kViolations = 1;
constexpr int kUsageError = 2;

struct UsageError {
  std::string message;
};

spec::Semantics semantics_option(const std::string& text) {
  if (auto s = spec::parse_semantics(text)) return *s;
  throw UsageError{"--semantics: unknown semantics '" + text + "' (expected fp8sm, upstream or pr3213)"};
}

struct LoadedScenario {
  std::string title;
  spec::Program program;
};

// A path to a scenario file, or the name (or §7 row) of a catalogue entry.
LoadedScenario load_scenario(const std::string& file_or_name) {
  std::ifstream file(file_or_name);
  if (file) {
    std::stringstream text;
    text << file.rdbuf();
    return LoadedScenario{file_or_name, spec::parse_scenario(text.str(), file_or_name)};
  }
  if (const spec::CatalogueEntry* entry = spec::find_catalogue_entry(file_or_name)) {
    return LoadedScenario{entry->name + " (row " + std::to_string(entry->row) + ": " + entry->title + ")",
                          spec::parse_scenario(entry->text, "catalogue:" + entry->name)};
  }
  throw UsageError{"no scenario file or catalogue entry named '" + file_or_name +
                   "' (see 'explorer list')"};
}

bool any_violation(const explorer::ScenarioReport& report) {
  for (const spec::StepResult& s : report.steps) {
    if (!s.violations.empty()) return true;
  }
  return false;
}

int run_command(const std::string& target, const std::string& semantics, bool json) {
  const spec::Semantics s = semantics_option(semantics);
  const LoadedScenario scenario = load_scenario(target);
  const explorer::ScenarioReport report = explorer::run_scenario(scenario.program, s);
  if (json) {
    explorer::print_json(std::cout, report);
  } else {
    explorer::print_text(std::cout, scenario.title, scenario.program, report);
  }
  return any_violation(report) ? kViolations : kClean;
}

// One line per catalogue entry and semantics: counts of each step and violated invariants.
int catalogue_command(const std::optional<std::string>& semantics) {
  std::vector<spec::Semantics> chosen(spec::kAllSemantics.begin(), spec::kAllSemantics.end());
  if (semantics) chosen = {semantics_option(*semantics)};
  bool violations = false;
  for (const spec::CatalogueEntry& entry : spec::catalogue()) {
    const spec::Program program = spec::parse_scenario(entry.text, "catalogue:" + entry.name);
    std::cout << entry.row << ". " << entry.name << " (" << entry.title << ")\n";
    for (spec::Semantics s : chosen) {
      const explorer::ScenarioReport report = explorer::run_scenario(program, s);
      violations = violations || any_violation(report);
      std::cout << "   " << spec::name(s) << ":";
      for (const spec::StepResult& step : report.steps) {
        std::cout << " " << step.forward_updates << "/" << step.backward_updates;
        if (!step.raised.empty()) std::cout << " (raised " << step.raised.front().kind << ")";
        std::cout << " [" << step.violations.to_string() << "]";
      }
      std::cout << "\n";
    }
  }
  return violations ? kViolations : kClean;
}

spec::InvariantSet checks_option(const std::string& text) {
  spec::InvariantSet set;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    const auto invariant = spec::parse_invariant(item);
    if (!invariant) throw UsageError{"--check: unknown invariant '" + item + "' (expected I1 .. I9, comma separated)"};
    set.add(*invariant);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return set;
}

// "512M", "4G", "1000000": bytes, with an optional binary suffix.
std::uint64_t memory_option(const std::string& text) {
  const auto bad = [&] {
    return UsageError{"--max-memory: '" + text + "' is not a size (expected e.g. 4G, 512M, 65536K or bytes)"};
  };
  if (text.empty() || !std::isdigit(static_cast<unsigned char>(text.front()))) throw bad();
  std::size_t used = 0;
  std::uint64_t value = 0;
  try {
    value = std::stoull(text, &used);
  } catch (const std::exception&) {
    throw bad();
  }
  const std::string suffix = text.substr(used);
  int shift = 0;
  if (suffix == "K" || suffix == "k") shift = 10;
  else if (suffix == "M" || suffix == "m") shift = 20;
  else if (suffix == "G" || suffix == "g") shift = 30;
  else if (!suffix.empty()) throw bad();
  if (shift != 0 && value > (std::numeric_limits<std::uint64_t>::max() >> shift)) throw bad();
  return value << shift;
}

int depth_command(explorer::SearchOptions options, const std::string& semantics, const std::string& checks,
                  const std::string& max_memory, bool json) {
  options.semantics = semantics_option(semantics);
  if (!max_memory.empty()) options.max_memory = memory_option(max_memory);
  if (!checks.empty()) options.checks = checks_option(checks);
  if (options.depth < 0) throw UsageError{"--depth: must be 0 or more"};
  if (options.alphabet.modules < 1 || options.alphabet.modules > 16) throw UsageError{"--modules: must be 1 to 16"};
  if (options.threads < 1) throw UsageError{"--threads: must be 1 or more"};
  // A progress line on a terminal, for runs of more than a second.
  const bool show_progress = !json && isatty(STDERR_FILENO) != 0;
  auto progress = [&](const explorer::LayerStats& layer, double seconds) {
    if (show_progress && seconds > 1.0) {
      std::cerr << "\rdepth " << layer.depth << ": " << layer.distinct << " states, " << static_cast<long>(seconds)
                << " s   " << std::flush;
    }
  };
  const explorer::SearchResult result = explorer::search(options, progress);
  if (show_progress && result.seconds > 1.0) std::cerr << "\n";
  if (json) {
    explorer::print_search_json(std::cout, options, result);
  } else {
    explorer::print_search_text(std::cout, options, result);
  }
  return result.counterexamples.empty() ? kClean : kViolations;
}

int list_command() {
  for (const spec::CatalogueEntry& entry : spec::catalogue()) {
    std::cout << entry.row << "\t" << entry.name << "\t" << entry.title << "\n";
  }
  return kClean;
}

int invariants_command() {
  for (spec::Invariant i : spec::kAllInvariants) std::cout << spec::id(i) << "\t" << spec::summary(i) << "\n";
  return kClean;
}

int table_command() {
  int index = 0;
  for (const auto& row : statemachine::Machine::rows().rows()) {
    std::cout << index++ << "\t" << row.to_string() << "\n";
  }
  return kClean;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"explorer: model checker for TE-style FP8 ownership, autocast and checkpoint state"};
  app.require_subcommand(0, 1);

  explorer::SearchOptions search;
  std::optional<int> depth;
  std::string search_semantics = "fp8sm";
  std::string checks;
  bool no_symmetry = false;
  bool search_json = false;
  app.add_option("--depth", depth, "explore every program of up to N statements");
  app.add_option("--semantics", search_semantics, "with --depth: fp8sm, upstream or pr3213 (default fp8sm)");
  app.add_option("--modules", search.alphabet.modules, "with --depth: module names L0.. (default 2)");
  app.add_option("--check", checks, "with --depth: only these invariants, e.g. I1,I4");
  app.add_option("--threads", search.threads, "with --depth: worker threads (default 1)");
  app.add_option("--max-states", search.max_states, "with --depth: stop past this many states (0: none)");
  std::string max_memory;
  app.add_option("--max-memory", max_memory,
                 "with --depth: stop before the stored states need more than this (e.g. 4G; default: no limit)");
  bool no_canonical_ids = false;
  app.add_flag("--no-canonical-ids", no_canonical_ids,
               "with --depth: do not merge states that differ only in the numbering of checkpoint, node and graph ids");
  app.add_flag("--no-symmetry", no_symmetry, "with --depth: do not reduce by module-name symmetry");
  app.add_flag("--json", search_json, "with --depth: print one JSON object");

  std::string target;
  std::string semantics = "fp8sm";
  bool json = false;
  CLI::App* run = app.add_subcommand("run", "run one scenario (a file, or a catalogue name or row)");
  run->add_option("scenario", target, "scenario file, or catalogue entry")->required();
  run->add_option("--semantics", semantics, "fp8sm, upstream or pr3213 (default fp8sm)");
  run->add_flag("--json", json, "print one JSON object");

  std::optional<std::string> catalogue_semantics;
  CLI::App* catalogue = app.add_subcommand("catalogue", "run every catalogue entry and summarise");
  catalogue->add_option("--semantics", catalogue_semantics, "only this semantics");

  CLI::App* list = app.add_subcommand("list", "list the built-in catalogue");
  CLI::App* invariants = app.add_subcommand("invariants", "list the invariants");
  CLI::App* table = app.add_subcommand("table", "print the transition table");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "explorer: error: " << e.what() << " (see 'explorer --help')\n";
    return kUsageError;
  }

  try {
    if (app.get_subcommands().empty()) {
      if (!depth) throw UsageError{"give a command (run, catalogue, list, invariants, table) or --depth N"};
      search.depth = *depth;
      search.alphabet.symmetry = !no_symmetry;
      search.canonical_ids = !no_canonical_ids;
      return depth_command(search, search_semantics, checks, max_memory, search_json);
    }
    if (depth) throw UsageError{"--depth is not an option of a command: use 'explorer --depth N'"};
    if (*run) return run_command(target, semantics, json);
    if (*catalogue) return catalogue_command(catalogue_semantics);
    if (*list) return list_command();
    if (*invariants) return invariants_command();
    if (*table) return table_command();
  } catch (const UsageError& e) {
    std::cerr << "explorer: error: " << e.message << "\n";
    return kUsageError;
  } catch (const spec::ParseError& e) {
    std::cerr << e.what() << "\n";
    return kUsageError;
  }
  return kUsageError;
}
