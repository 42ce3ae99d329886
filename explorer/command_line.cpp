#include "explorer/command_line.hpp"

#include "explorer/model/resource_bounds.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <array>
#include <limits>
#include <vector>

namespace fp8sm::explorer {

namespace {

constexpr std::array<Command, 7> kCommands = {Command::Search, Command::Run,        Command::Catalogue, Command::Random,
                                              Command::List,   Command::Invariants, Command::Table};

// A set of commands, one bit each.
using Commands = unsigned;
constexpr Commands taken_by(Command command) { return 1u << static_cast<unsigned>(command); }
template <class... More>
constexpr Commands taken_by(Command command, More... more) {
  return taken_by(command) | taken_by(more...);
}

// One option of the program: its value (a CommandLine text field) or its flag (a bool field),
// the commands that take it, and what it does, for --help.
struct OptionDeclaration {
  const char* name;
  const char* value;  // the value's name in --help; nullptr for a flag
  std::optional<std::string> CommandLine::*text;
  bool CommandLine::*flag;
  Commands commands;
  const char* help;
};

constexpr Commands kSearch = taken_by(Command::Search);

// Every option, once. What each means in detail: docs/explorer.md (search), docs/pictures.md
// (--mermaid, --dot), docs/json.md (--json).
// The help below writes the bounds' limits out.
static_assert(kMaxOpenBlocksBound == 16 && kMaxLiveNodesBound == 16, "update --max-open-blocks' and --max-live-nodes' help");

const OptionDeclaration kOptions[] = {
    {"--depth", "N", &CommandLine::depth, nullptr, kSearch,
     "explore every program of up to N statements (0 to 8; with --until-fixpoint, give up past N)"},
    {"--until-fixpoint", nullptr, nullptr, &CommandLine::until_fixpoint, kSearch,
     "explore layer after layer until one adds no state: every program within the bounds, of any length "
     "(needs --max-open-blocks and --max-live-nodes; docs/explorer.md \"Fixpoint\")"},
    {"--max-open-blocks", "K", &CommandLine::max_open_blocks, nullptr, kSearch,
     "programs hold at most K blocks open at once (1 to 16; default: no bound)"},
    {"--max-live-nodes", "M", &CommandLine::max_live_nodes, nullptr, kSearch,
     "programs hold at most M live autograd nodes in the step's graph and the saved tapes (1 to 16; default: no "
     "bound)"},
    {"--semantics", "S", &CommandLine::semantics, nullptr,
     taken_by(Command::Search, Command::Run, Command::Catalogue, Command::Table),
     "fp8sm, upstream or pr3213 (default fp8sm; catalogue: only this one, else all three; table: with --dot)"},
    {"--modules", "K", &CommandLine::modules, nullptr, taken_by(Command::Search, Command::Random),
     "module names L0 .. L{K-1} (search: 1 to 8, default 2; random: 1 to 16, default 3)"},
    {"--check", "I1,I4", &CommandLine::check, nullptr, kSearch, "only these invariants, comma separated"},
    {"--threads", "T", &CommandLine::threads, nullptr, kSearch, "worker threads (1 to 256, default 1)"},
    {"--max-states", "M", &CommandLine::max_states, nullptr, kSearch,
     "stop past M stored states, with a partial report (0, the default: no limit)"},
    {"--max-memory", "SIZE", &CommandLine::max_memory, nullptr, kSearch,
     "stop before the stored states need more than SIZE bytes (e.g. 4G, 512M, 65536K), with a partial report "
     "(0, the default: no limit)"},
    {"--snapshot", "DIR", &CommandLine::snapshot, nullptr, kSearch,
     "write the search's state to DIR at each completed layer (docs/explorer.md)"},
    {"--resume", "DIR", &CommandLine::resume, nullptr, kSearch,
     "continue the search whose snapshot is in DIR, from its last complete layer"},
    {"--no-canonical-ids", nullptr, nullptr, &CommandLine::no_canonical_ids, kSearch,
     "do not merge states that differ only in the numbering of checkpoint, node and graph ids"},
    {"--no-symmetry", nullptr, nullptr, &CommandLine::no_symmetry, kSearch,
     "do not reduce by module-name symmetry"},
    {"--data-inputs", nullptr, nullptr, &CommandLine::data_inputs, kSearch,
     "programs may also restart the chain from data that does not require grad (the statement 'data')"},
    {"--json", nullptr, nullptr, &CommandLine::json, taken_by(Command::Search, Command::Run, Command::Catalogue),
     "print one JSON document (docs/json.md); with --programs, one a program"},
    {"--programs", nullptr, nullptr, &CommandLine::programs, kSearch,
     "instead of the report, the program of every distinct top-level state, one a line, shortest first "
     "(with --json, each with its run; docs/explorer.md \"Programs\"); not with a budget, a snapshot, --coverage "
     "or a picture"},
    {"--programs-beyond", "N", &CommandLine::programs_beyond, nullptr, kSearch,
     "with --programs, list a program of more than N statements only if it runs a backward and holds a Linear "
     "inside a checkpoint for each statement past N (docs/explorer.md \"Programs\")"},
    {"--coverage", nullptr, nullptr, &CommandLine::coverage, kSearch,
     "per table row, the transitions that took it, and the rows never taken"},
    {"--mermaid", nullptr, nullptr, &CommandLine::mermaid, taken_by(Command::Search, Command::Run),
     "the run, or each shortest counterexample, as a Mermaid sequence diagram (docs/pictures.md)"},
    {"--dot", nullptr, nullptr, &CommandLine::dot, taken_by(Command::Search, Command::Run, Command::Table),
     "a Graphviz DOT drawing (docs/pictures.md)"},
    {"--seed", "S", &CommandLine::seed, nullptr, taken_by(Command::Random), "the stream of programs (default 1)"},
    {"--count", "N", &CommandLine::count, nullptr, taken_by(Command::Random),
     "how many programs (1 to 10000000, default 1)"},
    {"--length", "L", &CommandLine::length, nullptr, taken_by(Command::Random),
     "at most L choices a program (1 to 1000, default 30)"},
};

std::string commands_text(Commands commands) {
  std::string text;
  for (Command c : kCommands) {
    if ((commands & taken_by(c)) != 0) text += fmt::format("{}{}", text.empty() ? "" : ", ", command_name(c));
  }
  return text;
}

// A command's options, for its --help, and where to read more.
std::string options_help(Command command) {
  std::string text;
  for (const OptionDeclaration& o : kOptions) {
    if ((o.commands & taken_by(command)) == 0) continue;
    const std::string name = o.value != nullptr ? fmt::format("{} {}", o.name, o.value) : o.name;
    text += fmt::format("  {:<26}  {}\n", name, o.help);
  }
  if (text.empty()) return fmt::format("{} takes no options. See 'explorer --help'.\n", command_name(command));
  return fmt::format("Options of {} (they may stand before or after it):\n{}See 'explorer --help'.\n",
                     command_name(command), text);
}

constexpr const char* kFooter =
    "Options may stand before or after the command. Each belongs to the commands in its brackets:\n"
    "given to another command, it is an error. An empty value is an error, and numbers are decimal\n"
    "(010 is ten). 'explorer --depth N ...' with no command is 'explorer search --depth N ...', and so\n"
    "is 'explorer --until-fixpoint ...'.\n"
    "run's SCENARIO is the standard input if it is '-', else read as a file when a path of that name\n"
    "exists (a directory or an unreadable file is an error), else as a catalogue name or row (see\n"
    "'explorer list'); 'catalogue:NAME' or 'catalogue:ROW' always names the catalogue.\n"
    "Exit status: 0 no invariant violated, 1 some violated, 2 bad usage or input, 3 a search stopped\n"
    "by --max-states or --max-memory, or one to the fixpoint that found none by its depth, with no\n"
    "violation in what it explored, 4 a search stopped by\n"
    "SIGINT or SIGTERM (with the report of what it explored; a second signal, a second or more later,\n"
    "ends it at once).\n"
    "With --programs, the list is the output: 0 once it is complete, whatever the search violates, 4\n"
    "if a signal cut it short (then it holds the layers completed before).\n"
    "Under mpirun -np K a search runs on K processes with the same report; --max-memory is then the\n"
    "whole job's budget, each rank getting a K-th of it.\n";

// The digits as a number; nullopt past 2^64 - 1.
std::optional<std::uint64_t> decimal_digits(std::string_view digits) {
  std::uint64_t value = 0;
  for (char c : digits) {
    const auto digit = static_cast<std::uint64_t>(c - '0');
    if (value > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) return std::nullopt;
    value = value * 10 + digit;
  }
  return value;
}

bool all_digits(std::string_view text) {
  return !text.empty() && text.find_first_not_of("0123456789") == std::string_view::npos;
}

}  // namespace

std::string_view command_name(Command command) {
  switch (command) {
    case Command::Search: return "search";
    case Command::Run: return "run";
    case Command::Catalogue: return "catalogue";
    case Command::Random: return "random";
    case Command::List: return "list";
    case Command::Invariants: return "invariants";
    case Command::Table: return "table";
  }
  return "search";
}

CommandLine parse_command_line(int argc, char** argv) {
  CLI::App app{"explorer: model checker for TE-style FP8 ownership, autocast and checkpoint state", "explorer"};
  app.require_subcommand(0, 1);
  app.fallthrough();  // options after a command are the program's options too
  app.footer(kFooter);

  constexpr std::size_t kCount = std::size(kOptions);
  std::array<std::string, kCount> texts;
  std::array<CLI::Option*, kCount> added{};
  for (std::size_t i = 0; i < kCount; ++i) {
    const OptionDeclaration& o = kOptions[i];
    const std::string help = fmt::format("[{}] {}", commands_text(o.commands), o.help);
    added[i] = o.value != nullptr ? app.add_option(o.name, texts[i], help)->type_name(o.value)
                                  : app.add_flag(o.name, help);
  }
  CommandLine line;
  std::array<CLI::App*, kCommands.size()> subcommands{};
  subcommands[static_cast<std::size_t>(Command::Search)] =
      app.add_subcommand("search", "explore every program of up to --depth N statements, checking the invariants");
  subcommands[static_cast<std::size_t>(Command::Run)] =
      app.add_subcommand("run", "run one scenario (a file, or a catalogue name or row)");
  subcommands[static_cast<std::size_t>(Command::Run)]
      ->add_option("scenario", line.scenario, "scenario file, catalogue entry, or - for the standard input")
      ->required();
  subcommands[static_cast<std::size_t>(Command::Catalogue)] =
      app.add_subcommand("catalogue", "run every catalogue entry and summarise");
  subcommands[static_cast<std::size_t>(Command::Random)] =
      app.add_subcommand("random", "print random programs of the scenario language");
  subcommands[static_cast<std::size_t>(Command::List)] = app.add_subcommand("list", "list the built-in catalogue");
  subcommands[static_cast<std::size_t>(Command::Invariants)] = app.add_subcommand("invariants", "list the invariants");
  subcommands[static_cast<std::size_t>(Command::Table)] = app.add_subcommand("table", "print the transition table");

  // A command's help ends with its options, which are the program's (so CLI11 lists them in the
  // program's help only).
  for (Command c : kCommands) subcommands[static_cast<std::size_t>(c)]->footer(options_help(c));

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    line.help = app.help();  // the chosen command's help, if one was given before --help
    return line;
  } catch (const CLI::ParseError& e) {
    throw UsageError{fmt::format("{} (see 'explorer --help')", e.what())};
  }

  if (app.get_subcommands().empty()) {
    if (app.get_option("--depth")->count() == 0 && app.get_option("--until-fixpoint")->count() == 0) {
      throw UsageError{
          "give a command (search --depth N, search --until-fixpoint, run, catalogue, random, list, invariants, "
          "table)"};
    }
    line.command = Command::Search;
  } else {
    for (Command c : kCommands) {
      if (*subcommands[static_cast<std::size_t>(c)]) line.command = c;
    }
  }
  for (std::size_t i = 0; i < kCount; ++i) {
    const OptionDeclaration& o = kOptions[i];
    if (added[i]->count() == 0) continue;
    if ((o.commands & taken_by(line.command)) == 0) {
      throw UsageError{fmt::format("{} is not an option of {} (see 'explorer --help')", o.name,
                                   command_name(line.command))};
    }
    if (o.value == nullptr) {
      line.*(o.flag) = true;
      continue;
    }
    if (texts[i].empty()) throw UsageError{fmt::format("{}: an empty value, where {} is expected", o.name, o.value)};
    line.*(o.text) = texts[i];
  }
  if (line.command == Command::Search && !line.depth && !line.until_fixpoint) {
    throw UsageError{
        "search: give --depth N (every program of up to N statements) or --until-fixpoint (every program within "
        "bounds)"};
  }
  return line;
}

std::uint64_t decimal_option(std::string_view option, const std::string& text, std::string_view expected) {
  if (!all_digits(text)) {
    throw UsageError{fmt::format("{}: '{}' is not {}, in decimal digits", option, text, expected)};
  }
  const std::optional<std::uint64_t> value = decimal_digits(text);
  if (!value) throw UsageError{fmt::format("{}: '{}' is too large", option, text)};
  return *value;
}

std::uint64_t decimal_option(std::string_view option, const std::string& text, std::string_view expected,
                             std::uint64_t low, std::uint64_t high, std::string_view why) {
  const std::uint64_t value = decimal_option(option, text, expected);
  if (value < low || value > high) {
    throw UsageError{fmt::format("{}: must be {} to {}{}{}", option, low, high, why.empty() ? "" : " ", why)};
  }
  return value;
}

std::uint64_t memory_option(const std::string& text) {
  const std::size_t end = text.find_first_not_of("0123456789");
  const std::string_view digits = std::string_view(text).substr(0, end);
  const std::string_view suffix = end == std::string::npos ? std::string_view() : std::string_view(text).substr(end);
  int shift = -1;
  if (suffix.empty()) shift = 0;
  if (suffix == "K" || suffix == "k") shift = 10;
  if (suffix == "M" || suffix == "m") shift = 20;
  if (suffix == "G" || suffix == "g") shift = 30;
  if (digits.empty() || shift < 0) {
    throw UsageError{fmt::format("--max-memory: '{}' is not a size (expected e.g. 4G, 512M, 65536K or bytes)", text)};
  }
  const std::optional<std::uint64_t> value = decimal_digits(digits);
  if (!value || *value > (std::numeric_limits<std::uint64_t>::max() >> shift)) {
    throw UsageError{fmt::format("--max-memory: '{}' is too large", text)};
  }
  return *value << shift;
}

}  // namespace fp8sm::explorer
