// Printing programs back as scenario text. Both forms parse back to the same program, which is
// what lets the explorer print a counterexample that `explorer run` can replay.
#include <stdexcept>
#include <string>
#include <vector>

#include "spec/scenario_parser.hpp"

namespace fp8sm::spec {

namespace {

// A program built by code (not parsed) may carry an index with no name; printing a made-up
// name would produce a scenario that silently means something else.
const std::string& name_at(const std::vector<std::string>& names, std::uint16_t index,
                           const char* kind) {
  if (index >= names.size()) {
    throw std::invalid_argument(std::string("print_scenario: ") + kind + " index " +
                                std::to_string(index) + " has no name");
  }
  return names[index];
}

// One statement as written, without separators; an opening statement includes its '{'.
std::string statement_text(const Program& program, const Statement& statement) {
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
      return "linear " + name_at(program.module_names, statement.name, "module");
    case Op::RaiseAlways:
      return "raise always";
    case Op::RaiseOriginal:
      return "raise original";
    case Op::RaiseRecompute:
      return "raise recompute";
    case Op::RecomputeUncaptured:
      return "recompute_uncaptured";
    case Op::Save:
      return "save " + name_at(program.tape_names, statement.name, "tape");
    case Op::Backward: {
      std::string text = "backward";
      if (statement.name != kCurrentGraph) {
        text += " " + name_at(program.tape_names, statement.name, "tape");
      }
      if (statement.retain) text += " retain";
      return text;
    }
    case Op::Step:
      return "step";
  }
  throw std::invalid_argument("print_scenario: unknown statement op");
}

}  // namespace

std::string print_scenario(const Program& program) {
  std::string text;
  int depth = 0;
  for (const Statement& statement : program.statements) {
    // Clamped so that an unbalanced hand-built program still prints rather than crashing.
    if (statement.op == Op::Close && depth > 0) --depth;
    text.append(static_cast<std::size_t>(2 * depth), ' ');
    text += statement_text(program, statement);
    text += '\n';
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
    if (previous != nullptr) {
      const bool tight = opens_block(previous->op) || statement.op == Op::Close;
      text += tight ? " " : "; ";
    }
    text += statement_text(program, statement);
    previous = &statement;
  }
  return text;
}

}  // namespace fp8sm::spec
