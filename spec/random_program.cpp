#include "spec/random_program.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <string>

namespace fp8sm::spec {

namespace {

// A statement the generator may pick, and how many of the choices pick it.
struct Weighted {
  Statement statement;
  int weight = 1;
};

// The statements allowed after `open` (the blocks open now) with `saved` tapes, weighted. With
// shape.backward_bias, every weight is 16 times its own but those of what raises in a forward
// outside any `try` (a raise, recompute_uncaptured: an uncaught exception skips the rest of
// its step, its backward too), and modules are three times as likely, not twice.
std::vector<Weighted> allowed_statements(const std::vector<Op>& open, const std::vector<bool>& saved,
                                         const ProgramShape& shape) {
  const bool in_checkpoint = std::any_of(open.begin(), open.end(), is_checkpoint);
  const bool in_try = std::find(open.begin(), open.end(), Op::Try) != open.end();
  const int scale = shape.backward_bias ? 16 : 1;
  const int raising = in_try ? scale : 1;
  std::vector<Weighted> allowed;
  auto add = [&](Statement s, int weight) { allowed.push_back(Weighted{s, weight * scale}); };
  for (Op op : {Op::AutocastOn, Op::AutocastOff, Op::CheckpointReentrant, Op::CheckpointNonReentrant, Op::NoGrad,
                Op::Try}) {
    add(make_statement(op), 1);
  }
  for (int m = 0; m < shape.modules; ++m) {  // modules more likely
    add(make_statement(Op::Linear, static_cast<std::uint16_t>(m)), shape.backward_bias ? 3 : 2);
  }
  for (Op op : {Op::RaiseAlways, Op::RaiseOriginal, Op::RaiseRecompute}) {
    allowed.push_back(Weighted{make_statement(op), raising});
  }
  if (shape.recompute_uncaptured) allowed.push_back(Weighted{make_statement(Op::RecomputeUncaptured), raising});
  if (!in_checkpoint) {  // backward three times as likely: it is what runs recomputes
    add(make_statement(Op::Backward, kCurrentGraph, true), 1);
    add(make_statement(Op::Backward, kCurrentGraph, false), 2);
    for (int t = 0; t < shape.tapes; ++t) {
      const auto tape = static_cast<std::uint16_t>(t);
      add(make_statement(Op::Save, tape), 1);
      if (saved[tape]) {
        add(make_statement(Op::Backward, tape, false), 1);
        add(make_statement(Op::Backward, tape, true), 1);
      }
    }
    if (shape.data) add(make_statement(Op::Data), 1);
  }
  if (open.empty()) add(make_statement(Op::Step), 1);
  if (!open.empty()) add(make_statement(Op::Close), 2);
  return allowed;
}

// The statement `choice` picks: the weights laid end to end, `choice` wrapped around them.
const Statement& pick(const std::vector<Weighted>& allowed, int choice) {
  int total = 0;
  for (const Weighted& w : allowed) total += w.weight;
  int at = (choice < 0 ? -(choice + 1) : choice) % total;
  for (const Weighted& w : allowed) {
    if (at < w.weight) return w.statement;
    at -= w.weight;
  }
  return allowed.back().statement;  // not reached: `at` is below the total
}

// splitmix64: a fixed, portable generator (the standard distributions are not the same bytes
// on every library).
std::uint64_t next(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Whether step k (from 0) of a biased program is a training step: bits 2k and 2k+1 of `plan`
// (taken round), not both 0.
bool training_step(std::uint64_t plan, unsigned k) { return ((plan >> (2 * (k % 32))) & 3u) != 0; }

// The program of `choices`. With shape.backward_bias, the steps `plan` makes training steps run
// their statements inside an `autocast on` and end with a `backward` (unless their last
// statement at top level is one).
Program build(const std::vector<int>& choices, const ProgramShape& shape, std::uint64_t plan) {
  Program program;
  for (int m = 0; m < shape.modules; ++m) program.module_names.push_back(fmt::format("L{}", m));
  for (int t = 0; t < shape.tapes; ++t) program.tape_names.push_back(std::string(1, static_cast<char>('A' + t)));
  std::vector<Op> open;
  std::vector<bool> saved(static_cast<std::size_t>(shape.tapes), false);
  unsigned step = 0;
  bool step_empty = true;
  auto append = [&](const Statement& s) {
    if (opens_block(s.op)) open.push_back(s.op);
    if (s.op == Op::Close) open.pop_back();
    if (s.op == Op::Save) saved[s.name] = true;
    program.statements.push_back(s);
  };
  auto end_step = [&] {
    for (; !open.empty(); open.pop_back()) program.statements.push_back(make_statement(Op::Close));
    if (!step_empty && shape.backward_bias && training_step(plan, step)) {
      const Statement& last = program.statements.back();
      if (!(last.op == Op::Backward && last.name == kCurrentGraph)) append(make_statement(Op::Backward, kCurrentGraph));
    }
    ++step;
    step_empty = true;
  };
  for (int choice : choices) {
    const Statement s = pick(allowed_statements(open, saved, shape), choice);
    if (s.op == Op::Step) {
      end_step();
      append(s);
      continue;
    }
    if (step_empty && shape.backward_bias && training_step(plan, step)) append(make_statement(Op::AutocastOn));
    step_empty = false;
    append(s);
  }
  end_step();
  return program;
}

}  // namespace

Program program_from_choices(const std::vector<int>& choices, const ProgramShape& shape) {
  return build(choices, shape, ~std::uint64_t{0});
}

Program random_program(std::uint64_t seed, std::uint64_t index, int max_choices, const ProgramShape& shape) {
  std::uint64_t state = seed * 0x9E3779B97F4A7C15ull ^ (index + 1) * 0xD1B54A32D192ED03ull;  // a stream per index
  const int count = 1 + static_cast<int>(next(state) % static_cast<std::uint64_t>(std::max(1, max_choices)));
  std::vector<int> choices;
  for (int i = 0; i < count; ++i) choices.push_back(static_cast<int>(next(state) % 1000000u));
  const std::uint64_t plan = shape.backward_bias ? next(state) : 0;  // drawn after the choices
  return build(choices, shape, plan);
}

}  // namespace fp8sm::spec
