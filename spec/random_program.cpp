#include "spec/random_program.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <string>

namespace fp8sm::spec {

namespace {

// The statements allowed after `open` (the blocks open now) with `saved` tapes.
std::vector<Statement> allowed_statements(const std::vector<Op>& open, const std::vector<bool>& saved,
                                          const ProgramShape& shape) {
  const bool in_checkpoint = std::any_of(open.begin(), open.end(), is_checkpoint);
  std::vector<Statement> allowed;
  for (Op op : {Op::AutocastOn, Op::AutocastOff, Op::CheckpointReentrant, Op::CheckpointNonReentrant, Op::NoGrad,
                Op::Try}) {
    allowed.push_back(make_statement(op));
  }
  for (int m = 0; m < shape.modules; ++m) {  // modules twice as likely
    allowed.push_back(make_statement(Op::Linear, static_cast<std::uint16_t>(m)));
    allowed.push_back(make_statement(Op::Linear, static_cast<std::uint16_t>(m)));
  }
  for (Op op : {Op::RaiseAlways, Op::RaiseOriginal, Op::RaiseRecompute}) allowed.push_back(make_statement(op));
  if (shape.recompute_uncaptured) allowed.push_back(make_statement(Op::RecomputeUncaptured));
  if (!in_checkpoint) {  // backward three times as likely: it is what runs recomputes
    for (int i = 0; i < 3; ++i) allowed.push_back(make_statement(Op::Backward, kCurrentGraph, i == 0));
    for (int t = 0; t < shape.tapes; ++t) {
      const auto tape = static_cast<std::uint16_t>(t);
      allowed.push_back(make_statement(Op::Save, tape));
      if (saved[tape]) {
        allowed.push_back(make_statement(Op::Backward, tape, false));
        allowed.push_back(make_statement(Op::Backward, tape, true));
      }
    }
  }
  if (open.empty()) allowed.push_back(make_statement(Op::Step));
  if (!open.empty()) {
    allowed.push_back(make_statement(Op::Close));
    allowed.push_back(make_statement(Op::Close));
  }
  return allowed;
}

// splitmix64: a fixed, portable generator (the standard distributions are not the same bytes
// on every library).
std::uint64_t next(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace

Program program_from_choices(const std::vector<int>& choices, const ProgramShape& shape) {
  Program program;
  for (int m = 0; m < shape.modules; ++m) program.module_names.push_back(fmt::format("L{}", m));
  for (int t = 0; t < shape.tapes; ++t) program.tape_names.push_back(std::string(1, static_cast<char>('A' + t)));
  std::vector<Op> open;
  std::vector<bool> saved(static_cast<std::size_t>(shape.tapes), false);
  for (int choice : choices) {
    const std::vector<Statement> allowed = allowed_statements(open, saved, shape);
    const Statement s = allowed[static_cast<std::size_t>(choice < 0 ? -(choice + 1) : choice) % allowed.size()];
    if (opens_block(s.op)) open.push_back(s.op);
    if (s.op == Op::Close) open.pop_back();
    if (s.op == Op::Save) saved[s.name] = true;
    program.statements.push_back(s);
  }
  for (; !open.empty(); open.pop_back()) program.statements.push_back(make_statement(Op::Close));
  return program;
}

Program random_program(std::uint64_t seed, std::uint64_t index, int max_choices, const ProgramShape& shape) {
  std::uint64_t state = seed * 0x9E3779B97F4A7C15ull ^ (index + 1) * 0xD1B54A32D192ED03ull;  // a stream per index
  const int count = 1 + static_cast<int>(next(state) % static_cast<std::uint64_t>(std::max(1, max_choices)));
  std::vector<int> choices;
  for (int i = 0; i < count; ++i) choices.push_back(static_cast<int>(next(state) % 1000u));
  return program_from_choices(choices, shape);
}

}  // namespace fp8sm::spec
