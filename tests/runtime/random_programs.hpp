// A random program of the scenario language run on the runtime and on the model, compared
// event for event: the sequence of table events each fired, the rows each took (which guards
// held) and what each raised (the trace),
// the update counts, the escaped exceptions and the final machine state, under every
// semantics. For the properties of test_runtime_properties (CPU backend) and
// test_device_backend_properties (the CUDA kernels).
#pragma once

#include <rapidcheck.h>

#include <algorithm>
#include <iterator>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "runtime/backends.hpp"
#include "scenario_on_runtime.hpp"
#include "spec/format.hpp"
#include "spec/random_program.hpp"
#include "spec/scenario_parser.hpp"
#include "interpreter/interpreter.hpp"

namespace fp8sm::test_support {

constexpr int kModules = 3;

// A well-formed program of the language (every statement), from a list of choices (RapidCheck
// shrinks programs by shrinking them).
inline spec::Program program_from(const std::vector<int>& choices) {
  spec::ProgramShape shape;
  shape.modules = kModules;
  return spec::program_from_choices(choices, shape);
}

// The model's trace: every event the interpreter fired, with the rows it took and the kind of
// what it raised. Attach it to the interpreter's machine before running.
class EventTrace : public statemachine::Observer {
 public:
  void attach(statemachine::Machine& machine) { machine.record_rows(&rows_); }
  void event_fired(const spec::AnyEvent& event, const std::optional<spec::RaisedException>& raised) override {
    events.push_back(runtime::FiredEvent{event, raised ? spec::name(raised->kind) : std::string(), rows_});
    rows_.clear();
  }
  std::vector<runtime::FiredEvent> events;

 private:
  std::vector<std::uint16_t> rows_;
};

// One event with its fields, for a failing trace.
inline std::string describe(const runtime::FiredEvent& fired) {
  return fmt::format("{} rows{}{}{}", fired.event, fired.rows.empty() ? "" : " ", fmt::join(fired.rows, " "),
                     fired.raised.empty() ? "" : fmt::format(" raised {}", fired.raised));
}

// Equal events: same alternative, same fields (the events are plain aggregates).
inline bool same_event(const runtime::FiredEvent& a, const runtime::FiredEvent& b) {
  return a.raised == b.raised && describe(a) == describe(b);
}

// Where two traces first differ, with both sides around it; empty if they are equal.
inline std::string trace_difference(const std::vector<runtime::FiredEvent>& model,
                                    const std::vector<runtime::FiredEvent>& runtime_trace) {
  std::size_t i = 0;
  while (i < model.size() && i < runtime_trace.size() && same_event(model[i], runtime_trace[i])) ++i;
  if (i == model.size() && i == runtime_trace.size()) return "";
  std::string out =
      fmt::format("the traces differ at event {} (model {} events, runtime {})\n", i, model.size(), runtime_trace.size());
  const std::size_t from = i >= 3 ? i - 3 : 0;
  for (std::size_t k = from; k < i + 3 && (k < model.size() || k < runtime_trace.size()); ++k) {
    fmt::format_to(std::back_inserter(out), "{}{}: model {} | runtime {}\n", k == i ? "> " : "  ", k,
                   k < model.size() ? describe(model[k]) : "-",
                   k < runtime_trace.size() ? describe(runtime_trace[k]) : "-");
  }
  return out;
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
  RC_CLASSIFY(has([](const Statement& s) { return s.op == Op::RecomputeUncaptured; }), "recompute_uncaptured");
  return program;
}

// `program` on the runtime with `backend` and on the model, under every semantics.
inline void check_program_on_runtime(const spec::Program& program, const std::string& backend) {
  for (spec::Semantics semantics : spec::kAllSemantics) {
    EventTrace trace;
    interpreter::Interpreter model(semantics, &trace);
    trace.attach(model.machine());
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
    RC_LOG() << fmt::format("{}:\n{}", semantics, program);
    const std::string difference = trace_difference(trace.events, run.events);
    RC_LOG() << difference;
    RC_ASSERT(difference.empty());
    // The rows are recorded (every event of the grad region, at least, takes one).
    RC_ASSERT(trace.events.empty() || std::any_of(trace.events.begin(), trace.events.end(),
                                                  [](const runtime::FiredEvent& e) { return !e.rows.empty(); }));
    RC_ASSERT(run.counts.size() == model.steps().size());
    for (std::size_t i = 0; i < run.counts.size(); ++i) {
      RC_ASSERT(run.counts[i].forward_updates == model.steps()[i].forward_updates);
      RC_ASSERT(run.counts[i].backward_updates == model.steps()[i].backward_updates);
      std::vector<std::string> kinds;
      for (const auto& e : model.steps()[i].raised) kinds.push_back(spec::name(e.kind));
      RC_ASSERT(run.raised[i] == kinds);
    }
    RC_ASSERT(run.machine_snapshot == model.machine().snapshot());
  }
}

}  // namespace fp8sm::test_support
