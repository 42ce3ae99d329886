// explorer: runs scenarios on the model of TE's FP8 ownership / autocast / checkpoint state
// and checks the invariants of spec §5.
//
//   explorer --depth N [--semantics fp8sm|upstream|pr3213] [--modules K] [--check I1,I4] [--threads T]
//            [--max-states M] [--max-memory BYTES[K|M|G]] [--no-symmetry] [--no-canonical-ids] [--json]
//                                        every program of up to N statements
//            [--coverage]
//            [--snapshot DIR | --resume DIR] the search's state saved at each layer; a killed run continued
//   mpirun -np K explorer --depth N ...  the same search on K processes (docs/explorer.md, "Many processes")
//            [--mermaid | --dot]          each shortest counterexample drawn (docs/pictures.md)
//   explorer run FILE|NAME|- [--semantics fp8sm|upstream|pr3213] [--json]   (-: standard input)
//            [--mermaid | --dot]          the run as a sequence diagram (docs/pictures.md)
//   explorer catalogue [--semantics S] [--json]
//                                        every built-in scenario, all semantics by default
//   explorer random [--seed S] [--count N] [--length L] [--modules K]
//                                        N random programs (the corpus of the TE conformance check)
//   explorer list                        the built-in catalogue
//   explorer invariants                  the invariants, one line each
//   explorer table                       the transition table, one row a line
//   explorer table --dot [--semantics S] the table as a Graphviz drawing (docs/pictures.md)
//
// Options may stand before or after the command; an option the command does not take is an
// error, never ignored.
//
// Exit status: 0 no invariant violated, 1 some violated, 2 bad usage or bad input (also a
// resource the run could not get), 3 a search stopped by a budget before it finished with no
// violation found in what it explored.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <new>
#include <optional>
#include <string>
#include <system_error>

#include "explorer/catalogue_report.hpp"
#include "explorer/mermaid.hpp"
#include "explorer/ranks.hpp"
#include "explorer/report.hpp"
#include "explorer/scenario_run.hpp"
#include "explorer/search.hpp"
#include "explorer/search_report.hpp"
#include "explorer/sequence_dot.hpp"
#include "explorer/table_dot.hpp"
#include "spec/catalogue.hpp"
#include "spec/invariants.hpp"
#include "spec/random_program.hpp"
#include "spec/scenario_parser.hpp"
#include "spec/semantics.hpp"
#include "statemachine/machine.hpp"
#ifdef FP8SM_HAVE_MPI
#include "explorer/mpi_ranks.hpp"
#endif

namespace {

using namespace fp8sm;

constexpr int kClean = 0;
constexpr int kViolations = 1;
constexpr int kUsageError = 2;
constexpr int kIncomplete = 3;
constexpr int kMaxThreads = 256;

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

// Everything left in `file` (`name` says which, for the error), or a UsageError saying why not.
std::string read_all(std::FILE* file, const std::string& name) {
  std::string text;
  char buffer[1 << 16];
  std::size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof buffer, file)) > 0) text.append(buffer, n);
  if (std::ferror(file) != 0) throw UsageError{fmt::format("cannot read {}: {}", name, std::strerror(errno))};
  return text;
}

// The whole text of the regular file at `path`, or a UsageError saying why not.
std::string read_scenario_file(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) {
    throw UsageError{fmt::format("cannot read '{}': {}", path, std::strerror(errno))};
  }
  if (S_ISDIR(info.st_mode)) {
    const bool in_catalogue = spec::find_catalogue_entry(path) != nullptr;
    throw UsageError{fmt::format("'{}' is a directory, not a scenario file{}", path,
                                 in_catalogue ? fmt::format(" (for the catalogue entry, write 'catalogue:{}')", path)
                                              : std::string())};
  }
  if (!S_ISREG(info.st_mode)) throw UsageError{fmt::format("'{}' is not a regular file", path)};
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) throw UsageError{fmt::format("cannot read '{}': {}", path, std::strerror(errno))};
  std::string text = read_all(file, fmt::format("'{}'", path));
  std::fclose(file);
  return text;
}

// `-` is the standard input; `catalogue:NAME` or `catalogue:ROW` is always the catalogue;
// otherwise a path that exists is a scenario file (read in full, or an error), and anything
// else a catalogue name or row.
LoadedScenario load_scenario(const std::string& file_or_name) {
  if (file_or_name == "-") {
    const std::string title = "standard input";
    return LoadedScenario{title, spec::parse_scenario(read_all(stdin, title), title)};
  }
  constexpr std::string_view kPrefix = "catalogue:";
  const bool forced = file_or_name.compare(0, kPrefix.size(), kPrefix) == 0;
  const std::string name = forced ? file_or_name.substr(kPrefix.size()) : file_or_name;
  struct stat info {};
  if (!forced) {
    if (::stat(file_or_name.c_str(), &info) == 0) {
      return LoadedScenario{file_or_name, spec::parse_scenario(read_scenario_file(file_or_name), file_or_name)};
    }
    if (errno != ENOENT && errno != ENOTDIR) {
      throw UsageError{fmt::format("cannot read '{}': {}", file_or_name, std::strerror(errno))};
    }
  }
  if (const spec::CatalogueEntry* entry = spec::find_catalogue_entry(name)) {
    return LoadedScenario{fmt::format("{} (row {}: {})", entry->name, entry->row, entry->title),
                          spec::parse_scenario(entry->text, "catalogue:" + entry->name)};
  }
  if (forced) throw UsageError{fmt::format("no catalogue entry named '{}' (see 'explorer list')", name)};
  throw UsageError{fmt::format("no scenario file or catalogue entry named '{}' (see 'explorer list')", file_or_name)};
}

bool any_violation(const explorer::ScenarioReport& report) {
  for (const spec::StepResult& s : report.steps) {
    if (!s.violations.empty()) return true;
  }
  return false;
}

// --mermaid, --dot: a run, or a search's counterexamples, drawn instead of reported.
enum class Picture { None, Mermaid, Dot };

// The run drawn as a sequence diagram (explorer/mermaid.hpp, explorer/sequence_dot.hpp); the
// exit status is the report's.
int run_picture_command(const std::string& target, const std::string& semantics, Picture picture) {
  const LoadedScenario scenario = load_scenario(target);
  const explorer::RunSequence run = explorer::record_run(scenario.title, scenario.program, semantics_option(semantics));
  fmt::print("{}", picture == Picture::Mermaid ? explorer::run_mermaid(run) : explorer::run_sequence_dot(run));
  for (const explorer::SequenceStep& step : run.steps) {
    if (!step.result.violations.empty()) return kViolations;
  }
  return kClean;
}

int run_command(const std::string& target, const std::string& semantics, bool json) {
  const spec::Semantics s = semantics_option(semantics);
  const LoadedScenario scenario = load_scenario(target);
  const explorer::ScenarioReport report = explorer::run_scenario(scenario.program, s);
  if (json) {
    fmt::print("{}", explorer::json_line(explorer::run_json(scenario.title, scenario.program, report)));
  } else {
    fmt::print("{}", explorer::run_text(scenario.title, scenario.program, report));
  }
  return any_violation(report) ? kViolations : kClean;
}

// One line per catalogue entry and semantics (counts of each step and violated invariants), or
// one JSON document.
int catalogue_command(const std::optional<std::string>& semantics, bool json) {
  std::vector<spec::Semantics> chosen(spec::kAllSemantics.begin(), spec::kAllSemantics.end());
  if (semantics) chosen = {semantics_option(*semantics)};
  const explorer::CatalogueReport report = explorer::run_catalogue(chosen);
  fmt::print("{}", json ? explorer::json_line(report.json) : report.text);
  return report.violations ? kViolations : kClean;
}

spec::InvariantSet checks_option(const std::string& text) {
  spec::InvariantSet set;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    const auto invariant = spec::parse_invariant(item);
    if (!invariant) throw UsageError{fmt::format("--check: unknown invariant '{}' (expected I1 .. I9, comma separated)", item)};
    set.add(*invariant);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return set;
}

// "512M", "4G", "1000000": bytes, with an optional binary suffix.
std::uint64_t memory_option(const std::string& text) {
  const auto bad = [&] {
    return UsageError{fmt::format("--max-memory: '{}' is not a size (expected e.g. 4G, 512M, 65536K or bytes)", text)};
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

// The search's processes: this one alone, or the ranks of an MPI job. Only rank 0 prints.
explorer::Ranks* the_ranks = nullptr;
bool printing() { return the_ranks == nullptr || the_ranks->rank() == 0; }

int depth_command(explorer::SearchOptions options, const std::string& semantics, const std::string& checks,
                  const std::string& max_memory, bool json, Picture picture) {
  options.semantics = semantics_option(semantics);
  if (!max_memory.empty()) options.max_memory = memory_option(max_memory);
  if (!checks.empty()) options.checks = checks_option(checks);
  if (options.depth < 0 || options.depth > explorer::kMaxSearchDepth) {
    throw UsageError{fmt::format("--depth: must be 0 to {} (the search's fixed-capacity states are sized for that; "
                                 "docs/explorer.md \"Capacities\")",
                                 explorer::kMaxSearchDepth)};
  }
  if (options.alphabet.modules < 1 || options.alphabet.modules > explorer::kMaxSearchModules) {
    throw UsageError{fmt::format("--modules: must be 1 to {} with --depth", explorer::kMaxSearchModules)};
  }
  if (options.threads < 1 || options.threads > kMaxThreads) {
    throw UsageError{fmt::format("--threads: must be 1 to {}", kMaxThreads)};
  }
  // A progress line on a terminal, for runs of more than a second.
  const bool show_progress = printing() && !json && isatty(STDERR_FILENO) != 0;
  auto progress = [&](const explorer::LayerStats& layer, double seconds) {
    if (show_progress && seconds > 1.0) {
      fmt::print(stderr, "\rdepth {}: {} states, {} s   ", layer.depth, layer.distinct, static_cast<long>(seconds));
      std::fflush(stderr);
    }
  };
  explorer::SingleRank alone;
  const explorer::SearchResult result = explorer::search(options, the_ranks != nullptr ? *the_ranks : alone, progress);
  const int status = !result.counterexamples.empty() ? kViolations : result.complete ? kClean : kIncomplete;
  if (!printing()) return status;
  if (show_progress && result.seconds > 1.0) fmt::print(stderr, "\n");
  if (result.resumed_from_layer >= 0) {
    fmt::print(stderr, "explorer: resumed from layer {} of the snapshot in '{}'\n", result.resumed_from_layer,
               options.snapshot_dir);
  }
  if (result.memory_stop_rank >= 0) {
    fmt::print(stderr,
               "explorer: rank {} of {} reached its share of --max-memory ({:.1f} MiB, the budget divided among the "
               "ranks) while expanding depth {}; the report covers what was explored\n",
               result.memory_stop_rank, result.ranks, static_cast<double>(result.memory_share) / (1024.0 * 1024.0),
               result.depth_completed + 1);
  }
  if (picture == Picture::Mermaid) {
    fmt::print("{}", explorer::counterexamples_mermaid(result.counterexamples, options.semantics));
  } else if (picture == Picture::Dot) {
    fmt::print("{}", explorer::counterexamples_dot(result.counterexamples, options.semantics));
  } else {
    fmt::print("{}", json ? explorer::json_line(explorer::search_json(options, result))
                          : explorer::search_text(options, result));
  }
  return status;
}

// `count` programs of the stream `seed`, each after a comment line naming it; the same bytes
// for the same arguments on every platform.
int random_command(std::uint64_t seed, std::uint64_t count, int length, int modules) {
  spec::ProgramShape shape;
  shape.modules = modules;
  for (std::uint64_t k = 0; k < count; ++k) {
    fmt::print("# program {} of seed {}\n{}", k, seed, spec::print_scenario(spec::random_program(seed, k, length, shape)));
  }
  return kClean;
}

int list_command() {
  for (const spec::CatalogueEntry& entry : spec::catalogue()) {
    fmt::print("{}\t{}\t{}\n", entry.row, entry.name, entry.title);
  }
  return kClean;
}

int invariants_command() {
  for (spec::Invariant i : spec::kAllInvariants) fmt::print("{}\t{}\n", spec::id(i), spec::summary(i));
  return kClean;
}

int table_command(const std::optional<std::string>& semantics, bool dot) {
  if (dot) {
    fmt::print("{}", explorer::table_dot(semantics ? std::optional(semantics_option(*semantics)) : std::nullopt));
    return kClean;
  }
  if (semantics) throw UsageError{"--semantics: table takes it with --dot only (the text lists every row)"};
  int index = 0;
  for (const auto& row : statemachine::Machine::rows().rows()) {
    fmt::print("{}\t{}\n", index++, row.to_string());
  }
  return kClean;
}

// The options, each declared once for the whole program: it may stand before or after the
// command, and each command checks that it takes every option it was given.
struct Options {
  std::optional<int> depth;
  std::optional<std::string> semantics;
  std::string checks;
  std::string max_memory;
  std::string max_states;
  std::string seed;
  std::string count;
  std::optional<int> length;
  bool json = false;
  bool coverage = false;
  bool mermaid = false;
  bool dot = false;
  bool no_symmetry = false;
  bool no_canonical_ids = false;
  std::string snapshot;
  std::string resume;
  explorer::SearchOptions search;
};

// Refuses every option given on the command line that `command` does not take.
void only(const CLI::App& app, const std::string& command, std::initializer_list<const char*> taken) {
  for (const CLI::Option* option : app.get_options()) {
    if (option->count() == 0 || option->get_name() == "--help") continue;
    bool ok = false;
    for (const char* name : taken) ok = ok || option->get_name() == name;
    if (!ok) throw UsageError{fmt::format("{} is not an option of {} (see 'explorer --help')", option->get_name(), command)};
  }
}

// A decimal count of `option`, or a UsageError that says what was wrong (`what`: the range).
std::uint64_t count_option(const char* option, const std::string& text, const char* what) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos) {
    throw UsageError{fmt::format("{}: '{}' is not {}", option, text, what)};
  }
  try {
    return std::stoull(text);
  } catch (const std::exception&) {
    throw UsageError{fmt::format("{}: '{}' is too large", option, text)};
  }
}

// --mermaid or --dot, at most one, and not with --json (a picture is no JSON document).
Picture picture_option(const Options& o) {
  if (o.mermaid && o.dot) throw UsageError{"--mermaid and --dot: give one of them"};
  if ((o.mermaid || o.dot) && o.json) {
    throw UsageError{fmt::format("{} draws a picture, --json prints a document: give one of them",
                                 o.mermaid ? "--mermaid" : "--dot")};
  }
  return o.mermaid ? Picture::Mermaid : o.dot ? Picture::Dot : Picture::None;
}

std::uint64_t max_states_option(const std::string& text) {
  return count_option("--max-states", text, "a count (0 or more; 0: no limit)");
}

struct Commands {
  const CLI::App* run;
  const CLI::App* catalogue;
  const CLI::App* random;
  const CLI::App* list;
  const CLI::App* invariants;
  const CLI::App* table;
};

int random_dispatch(Options& o, bool modules_given) {
  constexpr std::uint64_t kMaxCount = 10'000'000;
  const std::uint64_t seed = o.seed.empty() ? 1 : count_option("--seed", o.seed, "a seed (a number, 0 or more)");
  const std::uint64_t count =
      o.count.empty() ? 1 : count_option("--count", o.count, "a count (1 to 10000000)");
  if (count < 1 || count > kMaxCount) throw UsageError{"--count: must be 1 to 10000000"};
  const int length = o.length.value_or(30);
  if (length < 1 || length > 1000) throw UsageError{"--length: must be 1 to 1000"};
  const int modules = modules_given ? o.search.alphabet.modules : 3;
  if (modules < 1 || modules > 16) throw UsageError{"--modules: must be 1 to 16"};
  return random_command(seed, count, length, modules);
}

// --snapshot DIR writes snapshots to DIR; --resume DIR continues the search saved there and
// goes on writing there (with --snapshot, the same DIR only).
void snapshot_options(Options& o) {
  if (!o.resume.empty() && !o.snapshot.empty() && o.resume != o.snapshot) {
    throw UsageError{"--resume continues in the directory it reads: give --snapshot the same directory, or leave it out"};
  }
  if (o.resume.empty() && o.snapshot.empty()) return;
  o.search.snapshot_dir = o.resume.empty() ? o.snapshot : o.resume;
  o.search.resume = !o.resume.empty();
}

int dispatch(CLI::App& app, Options& o, const std::string& target, const Commands& c) {
  if (!app.get_subcommands().empty() && the_ranks != nullptr && the_ranks->size() > 1) {
    throw UsageError{fmt::format("only a --depth search runs on several processes: run '{}' without mpirun",
                                 app.get_subcommands().front()->get_name())};
  }
  if (app.get_subcommands().empty()) {
    if (!o.depth) throw UsageError{"give a command (run, catalogue, random, list, invariants, table) or --depth N"};
    o.search.depth = *o.depth;
    o.search.alphabet.symmetry = !o.no_symmetry;
    o.search.canonical_ids = !o.no_canonical_ids;
    o.search.coverage = o.coverage;
    if (!o.max_states.empty()) o.search.max_states = max_states_option(o.max_states);
    snapshot_options(o);
    const Picture picture = picture_option(o);
    if (picture != Picture::None && o.coverage) throw UsageError{"--coverage is part of the report: not with --mermaid or --dot"};
    return depth_command(o.search, o.semantics.value_or("fp8sm"), o.checks, o.max_memory, o.json, picture);
  }
  if (*c.run) {
    only(app, "run", {"--semantics", "--json", "--mermaid", "--dot"});
    if (const Picture picture = picture_option(o); picture != Picture::None) {
      return run_picture_command(target, o.semantics.value_or("fp8sm"), picture);
    }
    return run_command(target, o.semantics.value_or("fp8sm"), o.json);
  }
  if (*c.catalogue) {
    only(app, "catalogue", {"--semantics", "--json"});
    return catalogue_command(o.semantics, o.json);
  }
  if (*c.random) {
    only(app, "random", {"--seed", "--count", "--length", "--modules"});
    return random_dispatch(o, app.get_option("--modules")->count() > 0);
  }
  if (*c.table) {
    only(app, "table", {"--dot", "--semantics"});
    return table_command(o.semantics, o.dot);
  }
  only(app, app.get_subcommands().front()->get_name(), {});
  if (*c.list) return list_command();
  if (*c.invariants) return invariants_command();
  return kUsageError;
}

// A failure that every rank knows (the options, or one the search agreed on) is printed once,
// by rank 0; one that only this rank may know ends the whole job, naming this rank.
int fail(const std::string& line, bool every_rank_knows) {
  if (the_ranks == nullptr || the_ranks->size() == 1) {
    fmt::print(stderr, "{}\n", line);
    return kUsageError;
  }
  if (every_rank_knows) {
    if (printing()) fmt::print(stderr, "{}\n", line);
    return kUsageError;
  }
  fmt::print(stderr, "{} (rank {} of {})\n", line, the_ranks->rank(), the_ranks->size());
  std::fflush(stderr);
#ifdef FP8SM_HAVE_MPI
  explorer::MpiSession::abort_job(kUsageError);
#endif
  return kUsageError;
}

int explorer_main(int argc, char** argv);

}  // namespace

int main(int argc, char** argv) {
#ifdef FP8SM_HAVE_MPI
  // Started by mpirun (or another MPI launcher): this process is one rank of the search.
  if (explorer::launched_by_mpi()) {
    explorer::MpiSession session(argc, argv);
    explorer::MpiRanks ranks;
    the_ranks = &ranks;
    return explorer_main(argc, argv);
  }
#endif
  return explorer_main(argc, argv);
}

namespace {

int explorer_main(int argc, char** argv) {
  CLI::App app{"explorer: model checker for TE-style FP8 ownership, autocast and checkpoint state",
               "explorer"};
  app.require_subcommand(0, 1);
  app.fallthrough();  // options after a command are the program's options too

  Options o;
  app.add_option("--depth", o.depth, "explore every program of up to N statements");
  app.add_option("--semantics", o.semantics,
                 "fp8sm, upstream or pr3213 (default fp8sm; with catalogue: only this one)");
  app.add_option("--modules", o.search.alphabet.modules,
                 "with --depth or random: module names L0.. (1 to 8 with --depth, 16 with random; default 2, random: 3)");
  app.add_option("--check", o.checks, "with --depth: only these invariants, e.g. I1,I4");
  app.add_option("--threads", o.search.threads,
                 fmt::format("with --depth: worker threads (1 to {}, default 1)", kMaxThreads));
  app.add_option("--max-states", o.max_states, "with --depth: stop past this many states (0: no limit)");
  app.add_option("--max-memory", o.max_memory,
                 "with --depth: stop before the stored states need more than this (e.g. 4G; default: no limit)");
  app.add_option("--snapshot", o.snapshot,
                 "with --depth: write the search's state to DIR at each completed layer (docs/explorer.md)");
  app.add_option("--resume", o.resume,
                 "with --depth: continue the search whose snapshot is in DIR, from its last complete layer");
  app.add_flag("--no-canonical-ids", o.no_canonical_ids,
               "with --depth: do not merge states that differ only in the numbering of checkpoint, node and graph ids");
  app.add_flag("--no-symmetry", o.no_symmetry, "with --depth: do not reduce by module-name symmetry");
  app.add_flag("--json", o.json, "with --depth, run or catalogue: print one JSON document (docs/json.md)");
  app.add_flag("--coverage", o.coverage,
               "with --depth: per table row, the transitions that took it, and the rows never taken");
  app.add_flag("--mermaid", o.mermaid,
               "with run or --depth: the run, or each shortest counterexample, as a Mermaid sequence diagram");
  app.add_flag("--dot", o.dot, "with table, run or --depth: a Graphviz DOT drawing (docs/pictures.md)");
  app.add_option("--seed", o.seed, "with random: the stream of programs (default 1)");
  app.add_option("--count", o.count, "with random: how many programs (default 1)");
  app.add_option("--length", o.length, "with random: at most this many choices a program (default 30)");
  app.footer(
      "Options may stand before or after the command. run's SCENARIO is the standard input if it is\n"
      "'-', else read as a file when a path of that name exists (a directory or an unreadable file is\n"
      "an error), else as a catalogue name or row (see 'explorer list'); 'catalogue:NAME' or\n"
      "'catalogue:ROW' always names the catalogue.\n"
      "Exit status: 0 no invariant violated, 1 some violated, 2 bad usage or input, 3 a --depth\n"
      "search stopped by --max-states or --max-memory with no violation in what it explored.\n"
      "Under mpirun -np K a --depth search runs on K processes with the same report; --max-memory\n"
      "is then the whole job's budget, each rank getting a K-th of it.\n");

  std::string target;
  CLI::App* run = app.add_subcommand("run", "run one scenario (a file, or a catalogue name or row)");
  run->add_option("scenario", target, "scenario file, catalogue entry, or - for the standard input")->required();
  CLI::App* catalogue = app.add_subcommand("catalogue", "run every catalogue entry and summarise");
  CLI::App* random = app.add_subcommand("random", "print random programs of the scenario language");
  CLI::App* list = app.add_subcommand("list", "list the built-in catalogue");
  CLI::App* invariants = app.add_subcommand("invariants", "list the invariants");
  CLI::App* table = app.add_subcommand("table", "print the transition table");

  // Every failure is one line and exit status 2: resource errors too (memory, threads), never
  // an uncaught exception.
  try {
    try {
      app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
      return printing() ? app.exit(e) : 0;
    } catch (const CLI::ParseError& e) {
      return fail(fmt::format("explorer: error: {} (see 'explorer --help')", e.what()), true);
    }
    return dispatch(app, o, target, Commands{run, catalogue, random, list, invariants, table});
  } catch (const UsageError& e) {
    return fail(fmt::format("explorer: error: {}", e.message), true);
  } catch (const explorer::RankFailure& e) {
    return fail(fmt::format("explorer: error: {}", e.what()), true);
  } catch (const spec::ParseError& e) {
    return fail(e.what(), true);
  } catch (const std::bad_alloc&) {
    return fail("explorer: error: out of memory (for a --depth search, --max-memory stops it cleanly)", false);
  } catch (const std::exception& e) {
    return fail(fmt::format("explorer: error: {}", e.what()), false);
  } catch (...) {
    return fail("explorer: error: an unknown exception", false);
  }
}

}  // namespace
