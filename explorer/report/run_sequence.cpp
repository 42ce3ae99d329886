#include "explorer/report/run_sequence.hpp"

#include <fmt/format.h>

#include <cstdint>
#include <iterator>
#include <optional>
#include <stdexcept>
#include <type_traits>
#include <variant>

#include "explorer/model/scenario_run.hpp"
#include "explorer/report/report.hpp"
#include "interpreter/interpreter.hpp"
#include "spec/event_fields.hpp"
#include "spec/invariants.hpp"
#include "spec/scenario_parser.hpp"
#include "statemachine/observer.hpp"

namespace fp8sm::explorer {

const char* part_id(Part part) {
  switch (part) {
    case Part::Program: return "P";
    case Part::Autocast: return "AC";
    case Part::Checkpoint: return "CK";
    case Part::Ownership: return "OW";
    case Part::Grad: return "GR";
    case Part::Modules: return "M";
    case Part::Registry: return "UR";
  }
  return "?";
}

const char* part_title(Part part) {
  switch (part) {
    case Part::Program: return "program";
    case Part::Autocast: return "autocast";
    case Part::Checkpoint: return "checkpoint";
    case Part::Ownership: return "ownership (F)";
    case Part::Grad: return "grad mode";
    case Part::Modules: return "modules";
    case Part::Registry: return "update registry";
  }
  return "?";
}

namespace {

using spec::AnyEvent;

// The part of the model an event is addressed to: the table region whose rows make it (the
// module events' prepare, end and backward go to the modules, whose metas they move; a
// saved-tensor unpack to the checkpoint frame that saved it).
Part handler(const AnyEvent& event) {
  return std::visit(
      [](const auto& e) {
        using E = std::decay_t<decltype(e)>;
        if constexpr (std::is_same_v<E, spec::AutocastEnter> || std::is_same_v<E, spec::AutocastExit>) {
          return Part::Autocast;
        } else if constexpr (std::is_same_v<E, spec::GradPush> || std::is_same_v<E, spec::GradPop>) {
          return Part::Grad;
        } else if constexpr (std::is_same_v<E, spec::ModuleClaim> || std::is_same_v<E, spec::BackwardPassBegin> ||
                             std::is_same_v<E, spec::BackwardPassEnd>) {
          return Part::Ownership;
        } else if constexpr (std::is_same_v<E, spec::ModulePrepare> || std::is_same_v<E, spec::ModuleEndForward> ||
                             std::is_same_v<E, spec::ModuleBackwardBegin> || std::is_same_v<E, spec::ModuleBackward>) {
          return Part::Modules;
        } else {
          return Part::Checkpoint;  // checkpoint forward and recompute, unpack, release
        }
      },
      event);
}

class SequenceRecorder : public statemachine::Observer {
 public:
  explicit SequenceRecorder(const spec::Program& program) : program_(program) {}

  void attach(statemachine::Machine& machine) { machine.record_rows(&rows_); }
  std::vector<SequenceStep> steps() && { return std::move(steps_); }

  // The statement the program reaches next; noted once its step has begun.
  void statement(const spec::Statement& s, bool skipped) {
    pending_statement_ = fmt::format("{}{}", skipped ? "skipped: " : "", spec::print_statement(s, &program_));
    if (in_step_) flush_statement();
  }
  void statement_done() { flush_statement(); }

  void step_begin(int) override {
    steps_.emplace_back();
    in_step_ = true;
    flush_statement();
  }
  void step_end(int) override {
    flush_pending();
    in_step_ = false;
  }
  void exception_escaped(const spec::RaisedException& e) override {
    flush_pending();
    note(Part::Program, Part::Program, NoteKind::Escaped,
         fmt::format("{} escapes to the step: the rest of the step is skipped", spec::name(e.kind)));
  }

  void event_fired(const AnyEvent& event, const std::optional<spec::RaisedException>& raised) override {
    flush_statement();
    const Part to = handler(event);
    std::string text = fmt::format("{} · ", describe(event));
    if (rows_.empty()) {
      text += "no row";
    } else {
      text += rows_.size() == 1 ? "row " : "rows ";
      for (std::size_t i = 0; i < rows_.size(); ++i) text += fmt::format("{}{}", i == 0 ? "" : ", ", rows_[i]);
    }
    rows_.clear();
    current().items.push_back(SequenceItem{true, Part::Program, to, NoteKind::Other, text});
    // What the event's rows did, after the message that made them.
    for (SequenceItem& n : pending_notes_) current().items.push_back(std::move(n));
    pending_notes_.clear();
    if (raised) {
      note(to, to, NoteKind::Raised, fmt::format("raises {}: {}", spec::name(raised->kind), raised->message));
    }
  }

  // Hooks: the actions of the rows of the event being fired (noted after its message).
  void forward_update() override {
    later(Part::Registry, NoteKind::ForwardUpdate, "forward update: reduce_and_update_fp8_tensors(forward=True)");
  }
  void backward_update() override {
    later(Part::Registry, NoteKind::BackwardUpdate, "backward update: reduce_and_update_fp8_tensors(forward=False)");
  }
  void discard_forward_amax() override {
    later(Part::Registry, NoteKind::Other, "forward amaxes of the region discarded (no update folds them)");
  }
  void registered(statemachine::ModuleId m) override {
    pending_notes_.push_back(
        SequenceItem{false, Part::Modules, Part::Registry, NoteKind::Registry, fmt::format("{} joins the registry", module(m))});
  }
  void claimed(statemachine::ModuleId m, bool owner) override {
    later(Part::Ownership, NoteKind::Owner,
          fmt::format("{}'s node {} the backward update", module(m), owner ? "owns" : "does not own"));
  }

 private:
  const spec::Program& program_;
  std::vector<SequenceStep> steps_;
  bool in_step_ = false;
  std::optional<std::string> pending_statement_;
  std::vector<SequenceItem> pending_notes_;
  std::vector<std::uint16_t> rows_;

  SequenceStep& current() {
    if (steps_.empty()) steps_.emplace_back();  // never: the interpreter begins a step first
    return steps_.back();
  }
  void note(Part from, Part to, NoteKind kind, std::string text) {
    current().items.push_back(SequenceItem{false, from, to, kind, std::move(text)});
  }
  void later(Part over, NoteKind kind, std::string text) {
    pending_notes_.push_back(SequenceItem{false, over, over, kind, std::move(text)});
  }
  void flush_statement() {
    if (!pending_statement_ || !in_step_) return;
    note(Part::Program, Part::Program, NoteKind::Statement, std::move(*pending_statement_));
    pending_statement_.reset();
  }
  // Hooks outside any event (none today) still show, where they happened.
  void flush_pending() {
    flush_statement();
    for (SequenceItem& n : pending_notes_) current().items.push_back(std::move(n));
    pending_notes_.clear();
  }

  std::string module(statemachine::ModuleId m) const {
    return m < program_.module_names.size() ? program_.module_names[m] : fmt::format("module {}", m);
  }
  // "ModuleBackward L1, owner": the event's name and fields in words (spec/event_fields.hpp).
  std::string describe(const AnyEvent& event) const {
    return std::visit(
        [&](const auto& e) {
          std::string out(spec::EventFields<std::decay_t<decltype(e)>>::name);
          bool first = true;
          spec::for_each_field(e, [&](const auto& field, auto value) {
            using Field = std::decay_t<decltype(field)>;
            std::string words;
            bool qualifier = false;
            if constexpr (spec::is_flag_v<Field>) {
              words = value ? field.on : field.off;
              qualifier = field.qualifier();
            } else if constexpr (spec::is_module_field_v<Field>) {
              words = module(value);
            } else {
              words = fmt::format("C{}", value);
            }
            if (!words.empty()) out += fmt::format("{}{}", first && !qualifier ? " " : ", ", words);
            first = false;
          });
          return out;
        },
        event);
  }
};

}  // namespace

RunSequence record_run(const std::string& title, const spec::Program& program, spec::Semantics semantics) {
  SequenceRecorder recorder(program);
  interpreter::Interpreter interpreter(semantics, &recorder);
  recorder.attach(interpreter.machine());
  for (const spec::Statement& s : program.statements) {
    recorder.statement(s, interpreter.skipping());
    interpreter.feed(s);
    recorder.statement_done();
  }
  interpreter.end_of_file();

  // The verdicts are the run report's, exactly what `explorer run` prints (I8 included).
  const ScenarioReport report = run_scenario(program, semantics);
  RunSequence sequence{title, semantics, std::move(recorder).steps()};
  if (sequence.steps.size() != report.steps.size()) {
    throw std::logic_error(fmt::format("record_run: {} steps drawn, {} in the run's report", sequence.steps.size(),
                                       report.steps.size()));
  }
  for (std::size_t s = 0; s < sequence.steps.size(); ++s) {
    SequenceStep& step = sequence.steps[s];
    step.result = report.steps[s];
    step.items.push_back(SequenceItem{false, Part::Program, Part::Registry, NoteKind::StepEnd,
                                      fmt::format("step {} ends: {} forward, {} backward updates", s + 1,
                                                  step.result.forward_updates, step.result.backward_updates)});
    for (spec::Invariant i : spec::kAllInvariants) {
      if (!step.result.violations.contains(i)) continue;
      const auto& reasons = report.verdicts[s].first_reason;
      const auto reason = reasons.find(i);
      const std::string why =
          reason == reasons.end() ? std::string(spec::summary(i)) : with_module_names(reason->second, program);
      step.items.push_back(SequenceItem{false, Part::Program, Part::Registry, NoteKind::Violation,
                                        fmt::format("{} violated: {}", spec::id(i), why)});
    }
  }
  return sequence;
}

RunSequence record_counterexample(const Counterexample& c, spec::Semantics semantics) {
  const std::string title = fmt::format("shortest counterexample for {}, {} statements: {}", spec::id(c.invariant),
                                        c.length, spec::print_scenario_one_line(c.program));
  return record_run(title, c.program, semantics);
}

}  // namespace fp8sm::explorer
