#include "explorer/model/alphabet.hpp"

#include <fmt/core.h>

#include <string>

namespace fp8sm::explorer {

using spec::make_statement;
using spec::Op;
using spec::Statement;

spec::Statement close_statement() { return make_statement(Op::Close); }

void next_statements(const ProgramFacts& facts, const AlphabetOptions& options, std::vector<Statement>& out) {
  out.clear();
  const int max_open = options.bounds.open_blocks;
  if (max_open == 0 || static_cast<int>(facts.open.size()) < max_open) {
    for (Op op : {Op::AutocastOn, Op::AutocastOff, Op::CheckpointReentrant, Op::CheckpointNonReentrant, Op::NoGrad,
                  Op::Try}) {
      out.push_back(make_statement(op));
    }
  }
  const int names = options.symmetry ? std::min(options.modules, facts.modules_used + 1) : options.modules;
  for (int m = 0; m < names; ++m) out.push_back(make_statement(Op::Linear, static_cast<std::uint16_t>(m)));
  for (Op op : {Op::RaiseAlways, Op::RaiseOriginal, Op::RaiseRecompute, Op::RecomputeUncaptured}) {
    out.push_back(make_statement(op));
  }
  if (!facts.inside_checkpoint()) {
    for (int t = 0; t < options.tapes; ++t) out.push_back(make_statement(Op::Save, static_cast<std::uint16_t>(t)));
    out.push_back(make_statement(Op::Backward, spec::kCurrentGraph));
    out.push_back(make_statement(Op::Backward, spec::kCurrentGraph, true));
    for (int t = 0; t < options.tapes; ++t) {
      const auto tape = static_cast<std::uint16_t>(t);
      if (!facts.tape_saved[tape]) continue;
      out.push_back(make_statement(Op::Backward, tape));
      out.push_back(make_statement(Op::Backward, tape, true));
    }
    if (options.data) out.push_back(make_statement(Op::Data));
  }
  if (facts.open.empty()) out.push_back(make_statement(Op::Step));
}

spec::Program program_of(const std::vector<Statement>& statements, const AlphabetOptions& options) {
  spec::Program program;
  program.statements = statements;
  for (int m = 0; m < options.modules; ++m) program.module_names.push_back(fmt::format("L{}", m));
  for (int t = 0; t < options.tapes; ++t) program.tape_names.push_back(std::string(1, static_cast<char>('A' + t)));
  return program;
}

}  // namespace fp8sm::explorer
