// The explorer's command line, read (main.cpp runs what it says): which command, and every
// option as the user wrote it.
//
// Each option is declared once (command_line.cpp's table) with the commands that take it; it
// may stand before or after the command's name, and given to a command that does not take it,
// it is an error wherever it stands, never ignored. A value option given an empty value ('')
// is an error too, never taken for an option left out. Numbers are read by decimal_option and
// memory_option only, so every number of the command line is read alike: decimal digits.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace fp8sm::explorer {

// Bad usage or bad input: main prints "explorer: error: MESSAGE" and exits 2.
struct UsageError {
  std::string message;
};

// `explorer --depth N ...` or `explorer --until-fixpoint ...` with no command is Search.
enum class Command { Search, Run, Catalogue, Random, List, Invariants, Table };

std::string_view command_name(Command command);

// What was given: each value option's text (never empty), each flag.
struct CommandLine {
  Command command = Command::Search;
  std::string scenario;  // run's SCENARIO
  std::optional<std::string> depth, semantics, modules, check, threads, max_states, max_memory, snapshot, resume,
      seed, count, length, programs_beyond, max_open_blocks, max_live_nodes;
  bool json = false, coverage = false, mermaid = false, dot = false, no_symmetry = false, no_canonical_ids = false,
       programs = false, data_inputs = false, until_fixpoint = false;
  std::string help;  // not empty: --help was given, and this is the text to print (exit 0)
};

// Throws UsageError (the message names the option or the word at fault).
CommandLine parse_command_line(int argc, char** argv);

// `text`, the value of `option`, as a decimal number: one or more digits 0-9 and nothing else
// (no sign, no 0x; leading zeros do not make it octal). Otherwise a UsageError: "OPTION: 'TEXT'
// is not EXPECTED", or "... is too large" past 2^64 - 1.
std::uint64_t decimal_option(std::string_view option, const std::string& text, std::string_view expected);

// The same, and within [low, high]: otherwise "OPTION: must be LOW to HIGH" and `why`, if any.
std::uint64_t decimal_option(std::string_view option, const std::string& text, std::string_view expected,
                             std::uint64_t low, std::uint64_t high, std::string_view why = {});

// --max-memory's SIZE: a decimal number of bytes, or of KiB, MiB or GiB with the suffix K, M
// or G (either case). 0, in any unit, is no limit (as --max-states 0 is).
std::uint64_t memory_option(const std::string& text);

}  // namespace fp8sm::explorer
