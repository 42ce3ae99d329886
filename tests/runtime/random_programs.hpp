// A random program of the scenario language run on the runtime and on the model, compared
// statement for statement: update counts, escaped exceptions and the final machine state, under
// every semantics. For the properties of test_runtime_properties (CPU backend) and
// test_device_backend_properties (the CUDA kernels).
#pragma once

#include <rapidcheck.h>

#include <algorithm>
#include <string>
#include <vector>

#include "runtime/backends.hpp"
#include "scenario_on_runtime.hpp"
#include "spec/scenario_parser.hpp"
#include "statemachine/interpreter.hpp"

namespace fp8sm::test_support {

constexpr int kModules = 3;

// A well-formed program of the language ScenarioOnRuntime runs (all of it but
// recompute_uncaptured), from a list of choices: each choice picks one of the statements the
// language allows at that point (closing the innermost block among them), so RapidCheck
// shrinks programs by shrinking choices. Checkpoints of both kinds nest any way; `save` and
// `backward [TAPE] [retain]` stand outside checkpoints, a tape's backward after its save.
inline spec::Program program_from(const std::vector<int>& choices) {
  using spec::Op;
  using spec::Statement;
  constexpr std::uint16_t kTapes = 2;
  spec::Program program;
  for (int m = 0; m < kModules; ++m) program.module_names.push_back("L" + std::to_string(m));
  for (std::uint16_t t = 0; t < kTapes; ++t) program.tape_names.push_back(std::string(1, static_cast<char>('A' + t)));
  std::vector<Op> open;
  std::vector<bool> saved(kTapes, false);
  auto make = [](Op op, std::uint16_t name = 0, bool retain = false) {
    Statement s;
    s.op = op;
    s.name = name;
    s.retain = retain;
    return s;
  };
  for (int choice : choices) {
    const bool in_checkpoint = std::any_of(open.begin(), open.end(), spec::is_checkpoint);
    std::vector<Statement> allowed;
    for (Op op : {Op::AutocastOn, Op::AutocastOff, Op::CheckpointReentrant, Op::CheckpointNonReentrant, Op::NoGrad,
                  Op::Try}) {
      allowed.push_back(make(op));
    }
    for (int m = 0; m < kModules; ++m) {
      allowed.push_back(make(Op::Linear, static_cast<std::uint16_t>(m)));
      allowed.push_back(make(Op::Linear, static_cast<std::uint16_t>(m)));  // modules twice as likely
    }
    for (Op op : {Op::RaiseAlways, Op::RaiseOriginal, Op::RaiseRecompute}) allowed.push_back(make(op));
    if (!in_checkpoint) {  // backward three times as likely: it is what runs recomputes
      for (int i = 0; i < 3; ++i) allowed.push_back(make(Op::Backward, spec::kCurrentGraph, i == 0));
      for (std::uint16_t t = 0; t < kTapes; ++t) {
        allowed.push_back(make(Op::Save, t));
        if (saved[t]) {
          allowed.push_back(make(Op::Backward, t, false));
          allowed.push_back(make(Op::Backward, t, true));
        }
      }
    }
    if (open.empty()) allowed.push_back(make(Op::Step));
    if (!open.empty()) {
      allowed.push_back(make(Op::Close));
      allowed.push_back(make(Op::Close));
    }
    const Statement s = allowed[static_cast<std::size_t>(choice) % allowed.size()];
    if (spec::opens_block(s.op)) open.push_back(s.op);
    if (s.op == Op::Close) open.pop_back();
    if (s.op == Op::Save) saved[s.name] = true;
    program.statements.push_back(s);
  }
  for (; !open.empty(); open.pop_back()) program.statements.push_back(make(Op::Close));
  return program;
}

// Whether a non-reentrant checkpoint opens inside another.
inline bool nested_non_reentrant(const spec::Program& program) {
  std::vector<spec::Op> open;
  for (const spec::Statement& s : program.statements) {
    if (s.op == spec::Op::CheckpointNonReentrant &&
        std::find(open.begin(), open.end(), spec::Op::CheckpointNonReentrant) != open.end()) {
      return true;
    }
    if (spec::opens_block(s.op)) open.push_back(s.op);
    if (s.op == spec::Op::Close) open.pop_back();
  }
  return false;
}

// A random program of up to 40 choices (RapidCheck shrinks the choices).
inline spec::Program random_program() {
  using spec::Op;
  using spec::Statement;
  const auto choices = *rc::gen::resize(40, rc::gen::container<std::vector<int>>(rc::gen::inRange(0, 1000)));
  spec::Program program = program_from(choices);
  auto has = [&](auto predicate) { return std::any_of(program.statements.begin(), program.statements.end(), predicate); };
  RC_CLASSIFY(has([](const Statement& s) { return spec::is_checkpoint(s.op); }), "checkpoint");
  RC_CLASSIFY(has([](const Statement& s) { return s.op == Op::Backward; }), "backward");
  RC_CLASSIFY(has([](const Statement& s) { return s.op == Op::RaiseAlways || s.op == Op::RaiseOriginal || s.op == Op::RaiseRecompute; }), "raise");
  RC_CLASSIFY(has([](const Statement& s) { return s.op == Op::Try; }), "try");
  RC_CLASSIFY(has([](const Statement& s) { return s.op == Op::Backward && s.retain; }), "retain");
  RC_CLASSIFY(has([](const Statement& s) { return s.op == Op::Save; }), "save");
  RC_CLASSIFY(nested_non_reentrant(program), "nested non-reentrant");
  return program;
}

// `program` on the runtime with `backend` and on the model, under every semantics.
inline void check_program_on_runtime(const spec::Program& program, const std::string& backend) {
  for (spec::Semantics semantics : spec::kAllSemantics) {
    statemachine::Interpreter model(semantics, nullptr);
    model.run(program);

    runtime::Recipe recipe;
    recipe.reduce_amax = false;  // the model lets a module run twice in a region; TE then needs this
    recipe.amax_history_len = 4;
    ScenarioOnRuntime on_runtime(semantics, recipe, kModules, runtime::make_backend(backend));
    RuntimeRun run;
    try {
      run = on_runtime.run(program);
    } catch (const RuntimeRefused&) {
      RC_DISCARD("refused by the runtime where the model goes on (see RuntimeRefused)");
    }
    RC_LOG() << spec::name(semantics) << ":\n" << spec::print_scenario(program);
    RC_ASSERT(run.counts.size() == model.steps().size());
    for (std::size_t i = 0; i < run.counts.size(); ++i) {
      RC_ASSERT(run.counts[i].forward_updates == model.steps()[i].forward_updates);
      RC_ASSERT(run.counts[i].backward_updates == model.steps()[i].backward_updates);
      std::vector<std::string> kinds;
      for (const auto& e : model.steps()[i].raised) kinds.push_back(e.kind);
      RC_ASSERT(run.raised[i] == kinds);
    }
    RC_ASSERT(run.machine_snapshot == model.machine().snapshot());
  }
}

}  // namespace fp8sm::test_support
