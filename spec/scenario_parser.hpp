// Parsing and printing the scenario language (see docs/scenarios.md).
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

#include "spec/scenario.hpp"

namespace fp8sm::spec {

// A syntax or static-rule error. what() is one line: "FILE:LINE:COL: error: MESSAGE".
class ParseError : public std::runtime_error {
 public:
  ParseError(std::string file, SourcePos pos, std::string message);
  const std::string& file() const { return file_; }
  SourcePos pos() const { return pos_; }
  const std::string& message() const { return message_; }

 private:
  std::string file_;
  SourcePos pos_;
  std::string message_;
};

// How deep blocks may nest (any kind), and checkpoints among them. No person writes programs
// near these; they bound what a program can cost: a checkpoint k deep is recomputed by each
// of the k checkpoints around it, so the model's work grows with the cube of checkpoint
// nesting, and with the size of the program otherwise.
inline constexpr int kMaxBlockNesting = 1000;
inline constexpr int kMaxCheckpointNesting = 64;

// Parses a whole scenario. `file` only labels error messages.
Program parse_scenario(std::string_view text, const std::string& file = "<input>");

// Prints a program in the canonical multi-line form: one statement a line, blocks indented by
// two spaces, closing braces on their own line. parse_scenario(print_scenario(p)) == p
// (positions aside).
std::string print_scenario(const Program& program);

// The same on one line, statements separated by "; ".
std::string print_scenario_one_line(const Program& program);

// One statement as print_scenario writes it (an opening statement with its '{'), its module or
// tape named from `names`; without a program, by index: "linear #0", "backward #1 retain".
std::string print_statement(const Statement& statement, const Program* names = nullptr);

}  // namespace fp8sm::spec
