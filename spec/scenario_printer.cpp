// Printing programs back as scenario text. Both forms parse back to the same program, which is
// what lets the explorer print a counterexample that `explorer run` can replay.
#include <fmt/format.h>

#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "spec/scenario_parser.hpp"

namespace fp8sm::spec {

namespace {

// The name of a statement's module or tape: from its program, or "#INDEX" for a statement
// printed alone. A program built by code (not parsed) may carry an index with no name; printing
// a made-up name would produce a scenario that silently means something else.
std::string name_at(const std::vector<std::string>* names, std::uint16_t index, const char* kind) {
  if (names == nullptr) return fmt::format("#{}", index);
  if (index >= names->size()) throw std::invalid_argument(fmt::format("print_scenario: {} index {} has no name", kind, index));
  return (*names)[index];
}

}  // namespace

// One statement as written, without separators; an opening statement includes its '{'.
std::string print_statement(const Statement& statement, const Program* names) {
  switch (statement.op) {
    case Op::AutocastOn:
      return "autocast on {";
    case Op::AutocastOff:
      return "autocast off {";
    case Op::CheckpointReentrant:
      return "checkpoint reentrant {";
    case Op::CheckpointNonReentrant:
      return "checkpoint nonreentrant {";
    case Op::NoGrad:
      return "no_grad {";
    case Op::Try:
      return "try {";
    case Op::Close:
      return "}";
    case Op::Linear:
      return fmt::format("linear {}", name_at(names ? &names->module_names : nullptr, statement.name, "module"));
    case Op::RaiseAlways:
      return "raise always";
    case Op::RaiseOriginal:
      return "raise original";
    case Op::RaiseRecompute:
      return "raise recompute";
    case Op::RecomputeUncaptured:
      return "recompute_uncaptured";
    case Op::Save:
      return fmt::format("save {}", name_at(names ? &names->tape_names : nullptr, statement.name, "tape"));
    case Op::Backward: {
      const std::string tape = statement.name == kCurrentGraph
                                   ? ""
                                   : fmt::format(" {}", name_at(names ? &names->tape_names : nullptr, statement.name, "tape"));
      return fmt::format("backward{}{}", tape, statement.retain ? " retain" : "");
    }
    case Op::Step:
      return "step";
    case Op::Data:
      return "data";
  }
  throw std::invalid_argument("print_scenario: unknown statement op");
}

std::string print_scenario(const Program& program) {
  std::string text;
  int depth = 0;
  for (const Statement& statement : program.statements) {
    // Clamped so that an unbalanced hand-built program still prints rather than crashing.
    if (statement.op == Op::Close && depth > 0) --depth;
    fmt::format_to(std::back_inserter(text), "{:{}}{}\n", "", 2 * depth, print_statement(statement, &program));
    if (opens_block(statement.op)) ++depth;
  }
  return text;
}

// Separators follow the reading of the one-line example in the language doc:
// "{ " opens a body, " }" closes it, and "; " separates everything else.
std::string print_scenario_one_line(const Program& program) {
  std::string text;
  const Statement* previous = nullptr;
  for (const Statement& statement : program.statements) {
    const char* separator = previous == nullptr                                          ? ""
                            : opens_block(previous->op) || statement.op == Op::Close ? " "
                                                                                     : "; ";
    fmt::format_to(std::back_inserter(text), "{}{}", separator, print_statement(statement, &program));
    previous = &statement;
  }
  return text;
}

}  // namespace fp8sm::spec
