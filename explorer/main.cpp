// explorer: runs scenarios on the model of TE's FP8 ownership / autocast / checkpoint state
// and checks the invariants of spec §5.
//
//   explorer search --depth N [--semantics fp8sm|upstream|pr3213] [--modules K] [--check I1,I4]
//            [--threads T] [--max-states M] [--max-memory SIZE] [--no-symmetry] [--no-canonical-ids]
//            [--coverage] [--json | --mermaid | --dot] [--snapshot DIR | --resume DIR]
//                                        every program of up to N statements (docs/explorer.md);
//                                        --mermaid, --dot: each shortest counterexample drawn
//   explorer search --depth N --programs [--json] [the search's options but budgets, snapshots,
//            --coverage and pictures]    the program of each distinct top-level state, one a line
//   explorer --depth N ...               the same: the search's alias
//   mpirun -np K explorer search --depth N ...  the same search on K processes ("Many processes")
//   explorer run FILE|NAME|- [--semantics S] [--json | --mermaid | --dot]   (-: standard input)
//   explorer catalogue [--semantics S] [--json]
//                                        every built-in scenario, all semantics by default
//   explorer random [--seed S] [--count N] [--length L] [--modules K]
//                                        N random programs (the corpus of the TE conformance check)
//   explorer list                        the built-in catalogue
//   explorer invariants                  the invariants, one line each
//   explorer table [--dot [--semantics S]]  the transition table, one row a line, or drawn
//
// The command line is read in command_line.cpp: each option belongs to the commands that take
// it and is an error elsewhere, wherever it stands; an empty value is an error; numbers are
// decimal.
//
// Exit status: 0 no invariant violated, 1 some violated, 2 bad usage or bad input (also a
// resource the run could not get), 3 a search stopped by a budget before it finished with no
// violation found in what it explored, 4 a search stopped by SIGINT or SIGTERM (its report
// covers what it explored, violations included; interrupt_signals.hpp). With --programs the
// list is the output: 0 once complete, 4 if a signal cut it short.
#include <fmt/format.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <new>
#include <optional>
#include <string>

#include "explorer/command_line.hpp"
#include "explorer/interrupt_signals.hpp"
#include "explorer/model/resource_bounds.hpp"
#include "explorer/model/scenario_run.hpp"
#include "explorer/report/catalogue_report.hpp"
#include "explorer/report/mermaid.hpp"
#include "explorer/report/program_list.hpp"
#include "explorer/report/report.hpp"
#include "explorer/report/search_report.hpp"
#include "explorer/report/sequence_dot.hpp"
#include "explorer/report/table_dot.hpp"
#include "explorer/search/ranks.hpp"
#include "explorer/search/search.hpp"
#include "spec/catalogue.hpp"
#include "spec/invariants.hpp"
#include "spec/random_program.hpp"
#include "spec/scenario_parser.hpp"
#include "spec/semantics.hpp"
#include "statemachine/machine.hpp"
#ifdef FP8SM_HAVE_MPI
#include "explorer/search/mpi_ranks.hpp"
#endif

namespace {

using namespace fp8sm;
using explorer::Command;
using explorer::CommandLine;
using explorer::UsageError;
using explorer::decimal_option;
using explorer::memory_option;
using explorer::parse_command_line;

constexpr int kClean = 0;
constexpr int kViolations = 1;
constexpr int kUsageError = 2;
constexpr int kIncomplete = 3;
constexpr int kInterrupted = 4;  // not 128 + the signal: the explorer ended itself, with a report

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

// The run drawn as a sequence diagram (explorer/report/mermaid.hpp, explorer/report/sequence_dot.hpp); the
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

// The search's processes: this one alone, or the ranks of an MPI job. Only rank 0 prints.
explorer::Ranks* the_ranks = nullptr;
bool printing() { return the_ranks == nullptr || the_ranks->rank() == 0; }

// The line on standard error of a search that a signal stopped: where, what it explored, and
// how to go on from its snapshot.
std::string interrupted_line(const explorer::SearchOptions& options, const explorer::SearchResult& result,
                             const std::string& signal) {
  std::string line = fmt::format(
      "explorer: interrupted{} at depth {}: {} states explored, complete to depth {}; the report covers what was "
      "explored",
      signal.empty() ? "" : " by " + signal, result.depth_completed + 1, result.distinct, result.depth_completed);
  if (!options.snapshot_dir.empty()) {
    line += result.depth_completed > 0
                ? fmt::format("; --resume '{}' continues from layer {}", options.snapshot_dir, result.depth_completed)
                : std::string("; no layer was complete, so there is no snapshot to resume");
  }
  return line;
}

// `explorer search`: the search, and its report (text, JSON or the counterexamples drawn).
int search_command(explorer::SearchOptions options, bool json, Picture picture) {
  // A progress line on a terminal, for runs of more than a second. The first call is the
  // search's start: a resumed search's resumed layer, said at once.
  const bool show_progress = printing() && !json && isatty(STDERR_FILENO) != 0;
  bool started = false;
  auto progress = [&](const explorer::LayerStats& layer, double seconds) {
    if (!started && options.resume) {
      fmt::print(stderr, "explorer: resumed from layer {} of the snapshot in '{}'\n", layer.depth, options.snapshot_dir);
    }
    started = true;
    if (show_progress && seconds > 1.0) {
      fmt::print(stderr, "\rdepth {}: {} states, {} s   ", layer.depth, layer.distinct, static_cast<long>(seconds));
      std::fflush(stderr);
    }
  };
  explorer::SingleRank alone;
  explorer::SearchResult result;
  std::string signal;
  {
    // SIGINT and SIGTERM stop the search, not the program, while it runs (interrupt_signals.hpp).
    const explorer::InterruptSignals signals;
    options.interrupt = &signals.requested();
    result = explorer::search(options, the_ranks != nullptr ? *the_ranks : alone, progress);
    options.interrupt = nullptr;
    signal = signals.received();
  }
  const bool interrupted = result.stop_reason == explorer::StopReason::Interrupted;
  int status = result.complete ? kClean : kIncomplete;
  if (!result.counterexamples.empty()) status = kViolations;
  if (interrupted) status = kInterrupted;
  if (!printing()) return status;
  if (show_progress && result.seconds > 1.0) fmt::print(stderr, "\n");
  if (interrupted) fmt::print(stderr, "{}\n", interrupted_line(options, result, signal));
  if (result.memory_stop_rank >= 0) {
    fmt::print(stderr,
               "explorer: rank {} of {} reached its share of --max-memory ({:.1f} MiB, the budget divided among the "
               "ranks) while expanding depth {}; the report covers what was explored\n",
               result.memory_stop_rank, result.ranks, static_cast<double>(result.memory_share) / (1024.0 * 1024.0),
               result.depth_completed + 1);
  }
  if (picture == Picture::Mermaid) {
    fmt::print("{}", explorer::search_mermaid(options, result));
  } else if (picture == Picture::Dot) {
    fmt::print("{}", explorer::search_dot(options, result));
  } else {
    fmt::print("{}", json ? explorer::json_line(explorer::search_json(options, result))
                          : explorer::search_text(options, result));
  }
  return status;
}

// `explorer search --programs`: the program of every distinct top-level state, one a line on
// standard output as each layer completes (rank 0 prints), and one line of summary on standard
// error. The list is complete unless a signal stopped the search (exit 4, and the summary says
// which layers it holds); what the search violates is not its business (exit 0).
// With `beyond` (--programs-beyond), the deeper programs are a slice (listed_beyond); each
// line keeps the index it has in the whole list.
int programs_command(explorer::SearchOptions options, bool json, std::optional<int> beyond) {
  std::uint64_t index = 0, listed = 0;
  options.programs = [&](int, const explorer::SearchPath& path) {
    const spec::Program program = explorer::path_program(path, options.alphabet);
    ++index;
    if (beyond && !explorer::listed_beyond(program, *beyond)) return;
    ++listed;
    fmt::print("{}", explorer::program_line(program, index, options.semantics, json));
  };
  explorer::SingleRank alone;
  explorer::SearchResult result;
  std::string signal;
  {
    const explorer::InterruptSignals signals;
    options.interrupt = &signals.requested();
    result = explorer::search(options, the_ranks != nullptr ? *the_ranks : alone);
    options.interrupt = nullptr;
    signal = signals.received();
  }
  if (!printing()) return result.complete ? kClean : kInterrupted;
  // A list that did not all reach its reader (a full disk) must not end as a complete one.
  if (std::fflush(stdout) != 0 || std::ferror(stdout) != 0) {
    throw UsageError{fmt::format("cannot write the list to standard output: {}", std::strerror(errno))};
  }
  if (result.complete) {
    const std::string of_all = beyond ? fmt::format(" of the {}", index) : "";
    const std::string which =
        beyond ? fmt::format("every program of up to {} statements, and those beyond that run a backward with a "
                             "Linear in a checkpoint for each statement past {};",
                             *beyond, *beyond)
               : fmt::format("every program of up to {} statements,", options.depth);
    fmt::print(stderr, "explorer: {} programs{}, one per distinct top-level state but the empty program's, of {} "
                       "distinct states ({} {})\n",
               listed, of_all, result.distinct, which, spec::name(options.semantics));
    return kClean;
  }
  fmt::print(stderr, "explorer: interrupted{} at depth {}: the list is incomplete, {} programs of depths 1 to {} only\n",
             signal.empty() ? "" : " by " + signal, result.depth_completed + 1, listed, result.depth_completed);
  return kInterrupted;
}

// `count` programs of the stream `seed`, each after a comment line naming it; the same bytes
// for the same arguments on every platform.
int random_command(std::uint64_t seed, std::uint64_t count, int length, int modules) {
  spec::ProgramShape shape;
  shape.modules = modules;
  shape.data = true;
  shape.backward_bias = true;
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

// `count` programs of the stream `seed` (random's options, or their defaults).
int random_dispatch(const CommandLine& line) {
  const std::uint64_t seed = line.seed ? decimal_option("--seed", *line.seed, "a seed (a number, 0 or more)") : 1;
  const std::uint64_t count =
      line.count ? decimal_option("--count", *line.count, "a count (1 to 10000000)", 1, 10'000'000) : 1;
  const auto length =
      static_cast<int>(line.length ? decimal_option("--length", *line.length, "a length (1 to 1000)", 1, 1000) : 30);
  const auto modules =
      static_cast<int>(line.modules ? decimal_option("--modules", *line.modules, "a number of modules (1 to 16)", 1, 16) : 3);
  return random_command(seed, count, length, modules);
}

// --mermaid or --dot, at most one, and not with --json (a picture is no JSON document).
Picture picture_option(const CommandLine& line) {
  if (line.mermaid && line.dot) throw UsageError{"--mermaid and --dot: give one of them"};
  if ((line.mermaid || line.dot) && line.json) {
    throw UsageError{fmt::format("{} draws a picture, --json prints a document: give one of them",
                                 line.mermaid ? "--mermaid" : "--dot")};
  }
  return line.mermaid ? Picture::Mermaid : line.dot ? Picture::Dot : Picture::None;
}

// The search's options from the command line, each checked.
explorer::SearchOptions search_options(const CommandLine& line) {
  explorer::SearchOptions options;
  options.until_fixpoint = line.until_fixpoint;
  if (line.until_fixpoint) {
    // What makes the bounded states finite (docs/explorer.md "Fixpoint").
    options.abstractions = explorer::Abstractions::sound();
    // The depth is where a search that finds no fixpoint gives up.
    options.depth = explorer::kMaxFixpointDepth;
    if (line.depth) {
      options.depth = static_cast<int>(decimal_option(
          "--depth", *line.depth, fmt::format("a depth (a number of statements, 1 to {})", explorer::kMaxFixpointDepth),
          1, explorer::kMaxFixpointDepth, "(a search to the fixpoint's paths hold that many; docs/explorer.md \"Fixpoint\")"));
    }
    if (!line.max_open_blocks || !line.max_live_nodes) {
      throw UsageError{"--until-fixpoint needs --max-open-blocks K and --max-live-nodes M: without them programs hold "
                       "ever more, and there is no fixpoint"};
    }
  } else {
    options.depth = static_cast<int>(decimal_option(
        "--depth", *line.depth, "a depth (a number of statements, 0 to 8)", 0, explorer::kMaxSearchDepth,
        "(the search's fixed-capacity states are sized for that; docs/explorer.md \"Capacities\")"));
  }
  if (line.max_open_blocks) {
    options.alphabet.bounds.open_blocks = static_cast<int>(
        decimal_option("--max-open-blocks", *line.max_open_blocks,
                       fmt::format("a number of blocks (1 to {})", explorer::kMaxOpenBlocksBound), 1,
                       explorer::kMaxOpenBlocksBound));
  }
  if (line.max_live_nodes) {
    options.alphabet.bounds.live_nodes = static_cast<int>(
        decimal_option("--max-live-nodes", *line.max_live_nodes,
                       fmt::format("a number of nodes (1 to {})", explorer::kMaxLiveNodesBound), 1,
                       explorer::kMaxLiveNodesBound));
  }
  options.semantics = semantics_option(line.semantics.value_or("fp8sm"));
  if (line.modules) {
    options.alphabet.modules = static_cast<int>(decimal_option("--modules", *line.modules, "a number of modules", 1,
                                                               explorer::kMaxSearchModules, "for the search"));
  }
  if (line.threads) {
    options.threads = static_cast<int>(decimal_option("--threads", *line.threads, "a number of threads", 1,
                                                      explorer::kMaxSearchThreads));
  }
  if (line.check) options.checks = checks_option(*line.check);
  if (line.max_states) {
    options.max_states = decimal_option("--max-states", *line.max_states, "a count (0 or more; 0: no limit)");
  }
  if (line.max_memory) options.max_memory = memory_option(*line.max_memory);
  options.alphabet.symmetry = !line.no_symmetry;
  options.alphabet.data = line.data_inputs;
  options.canonical_ids = !line.no_canonical_ids;
  options.coverage = line.coverage;
  // --snapshot DIR writes snapshots to DIR; --resume DIR continues the search saved there and
  // goes on writing there (with --snapshot, the same DIR only).
  if (line.resume && line.snapshot && *line.resume != *line.snapshot) {
    throw UsageError{"--resume continues in the directory it reads: give --snapshot the same directory, or leave it out"};
  }
  if (line.resume || line.snapshot) {
    options.snapshot_dir = line.resume ? *line.resume : *line.snapshot;
    options.resume = line.resume.has_value();
  }
  return options;
}

// --programs lists the whole search: what would cut it short or resume it after layers it did
// not list is refused (an incomplete list must never look complete), and so is what belongs to
// the report it replaces.
void check_programs_options(const CommandLine& line, const explorer::SearchOptions& options) {
  if (options.max_states != 0 || options.max_memory != 0) {
    throw UsageError{fmt::format("--programs lists every state of the search: not with {}, which may stop it early "
                                 "(0, no limit, is allowed)",
                                 options.max_states != 0 ? "--max-states" : "--max-memory")};
  }
  if (line.snapshot || line.resume) {
    throw UsageError{fmt::format("--programs lists each layer as it completes: not with {} (a resumed search starts "
                                 "after the layers of its snapshot, which it would not list)",
                                 line.resume ? "--resume" : "--snapshot")};
  }
  const char* report_only = line.coverage ? "--coverage" : line.mermaid ? "--mermaid" : line.dot ? "--dot" : nullptr;
  if (report_only != nullptr) {
    throw UsageError{fmt::format("--programs prints the programs instead of the report: not with {}", report_only)};
  }
}

// --programs-beyond N: 0 up to the search's depth (at the depth itself it keeps everything).
std::optional<int> programs_beyond(const CommandLine& line, const explorer::SearchOptions& options) {
  if (!line.programs_beyond) return std::nullopt;
  return static_cast<int>(decimal_option("--programs-beyond", *line.programs_beyond,
                                         "a number of statements (0 to the search's depth)", 0,
                                         static_cast<std::uint64_t>(options.depth),
                                         "(the statements every listed program may have)"));
}

int dispatch(const CommandLine& line) {
  if (line.command != Command::Search && the_ranks != nullptr && the_ranks->size() > 1) {
    throw UsageError{fmt::format("only a search runs on several processes: run '{}' without mpirun",
                                 command_name(line.command))};
  }
  switch (line.command) {
    case Command::Search: {
      const explorer::SearchOptions options = search_options(line);
      if (line.programs) {
        check_programs_options(line, options);
        return programs_command(options, line.json, programs_beyond(line, options));
      }
      if (line.programs_beyond) throw UsageError{"--programs-beyond slices the list of --programs: give --programs"};
      const Picture picture = picture_option(line);
      if (picture != Picture::None && line.coverage) {
        throw UsageError{"--coverage is part of the report: not with --mermaid or --dot"};
      }
      return search_command(options, line.json, picture);
    }
    case Command::Run:
      if (const Picture picture = picture_option(line); picture != Picture::None) {
        return run_picture_command(line.scenario, line.semantics.value_or("fp8sm"), picture);
      }
      return run_command(line.scenario, line.semantics.value_or("fp8sm"), line.json);
    case Command::Catalogue: return catalogue_command(line.semantics, line.json);
    case Command::Random: return random_dispatch(line);
    case Command::Table: return table_command(line.semantics, line.dot);
    case Command::List: return list_command();
    case Command::Invariants: return invariants_command();
  }
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
  // Every failure is one line and exit status 2: resource errors too (memory, threads), never
  // an uncaught exception.
  try {
    const CommandLine line = parse_command_line(argc, argv);
    if (!line.help.empty()) {
      if (printing()) fmt::print("{}", line.help);
      return kClean;
    }
    return dispatch(line);
  } catch (const UsageError& e) {
    return fail(fmt::format("explorer: error: {}", e.message), true);
  } catch (const explorer::RankFailure& e) {
    return fail(fmt::format("explorer: error: {}", e.what()), true);
  } catch (const spec::ParseError& e) {
    return fail(e.what(), true);
  } catch (const std::bad_alloc&) {
    return fail("explorer: error: out of memory (for a search, --max-memory stops it cleanly)", false);
  } catch (const std::exception& e) {
    return fail(fmt::format("explorer: error: {}", e.what()), false);
  } catch (...) {
    return fail("explorer: error: an unknown exception", false);
  }
}

}  // namespace
