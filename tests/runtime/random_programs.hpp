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
#include "spec/random_program.hpp"
#include "spec/scenario_parser.hpp"
#include "statemachine/interpreter.hpp"

namespace fp8sm::test_support {

constexpr int kModules = 3;

// A well-formed program of the language ScenarioOnRuntime runs (all of it but
// recompute_uncaptured), from a list of choices (RapidCheck shrinks programs by shrinking them).
inline spec::Program program_from(const std::vector<int>& choices) {
  spec::ProgramShape shape;
  shape.modules = kModules;
  shape.recompute_uncaptured = false;
  return spec::program_from_choices(choices, shape);
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
