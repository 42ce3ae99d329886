// Runs a scenario on the model: turns each statement into the driver's operations (spec §3's
// composite operations are the driver's, shared with the runtime), keeps the program's blocks,
// `try`, exceptions and steps. Shared by every semantics.
//
// Statements are fed one at a time, exactly as a program grows; the interpreter keeps them in
// a log, and a checkpoint's body is the slice of it that its recompute replays. Every
// statement costs time independent of how deep it is nested (the work of recomputes aside,
// which is the program's own).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <stdexcept>
#include <vector>

#include "spec/scenario.hpp"
#include "spec/semantics.hpp"
#include "spec/step_result.hpp"
#include "driver/driver.hpp"
#include "statemachine/encoder.hpp"
#include "statemachine/machine.hpp"
#include "statemachine/observer.hpp"

namespace fp8sm::interpreter {

using statemachine::CaptureId;
using statemachine::Machine;
using statemachine::ModuleId;
using statemachine::Observer;

class Interpreter;

// A checkpoint's body: the statements [begin, end) of the interpreter's statement log (every
// statement fed to it, in order). A slice, not a copy, so that nested checkpoints cost no
// more than the statements they hold.
struct Body {
  std::uint32_t begin = 0;
  std::uint32_t end = 0;
};

// The interpreter as the driver's host: a node keeps nothing (there are no tensors), a body is
// a slice of the log.
struct ModelTraits {
  using Host = Interpreter;
  struct NodePayload {};
  using Body = interpreter::Body;
};
using ModelDriver = driver::Driver<ModelTraits>;

// An exception of the modelled program, in flight.
struct ModelException {
  spec::RaisedException raised;
};

class Interpreter : private statemachine::Hooks {
 public:
  // `observer` (may be nullptr) must outlive the interpreter.
  Interpreter(spec::Semantics semantics, Observer* observer);
  // A copy of `other` between two statements, reporting to `observer` (a copy of other's
  // observer, which this constructor attaches to the new machine, or nullptr).
  Interpreter(const Interpreter& other, Observer* observer);
  Interpreter(const Interpreter&) = delete;
  Interpreter& operator=(const Interpreter&) = delete;
  // Becomes a copy of `other` between two statements, still reporting to its own observer
  // (which the caller has made a copy of other's) and keeping its storage where it is large
  // enough: the explorer recycles states instead of allocating each successor anew.
  void assign(const Interpreter& other);

  // Runs a whole program: every statement, then the end of file.
  void run(const spec::Program& program);

  void feed(const spec::Statement& statement);
  void end_of_file();

  // One result per step so far (counts and escaped exceptions; violations are the checker's).
  const std::vector<spec::StepResult>& steps() const { return steps_; }
  // The results of finished steps, handed over and forgotten (the explorer keeps none).
  std::vector<spec::StepResult> take_steps() { return std::exchange(steps_, {}); }

  // Between statements: everything the interpreter's future depends on, packed (the
  // machine's own snapshot included). `step_results`: the step's counts and escaped
  // exceptions so far, which only a comparison of whole steps (I8) reads.
  void encode(statemachine::Encoder& out, bool step_results = true) const;

  const Machine& machine() const { return machine_; }
  Machine& machine() { return machine_; }

 private:
  friend ModelDriver;

  struct Scope {
    spec::Op op = spec::Op::Try;
    driver::CheckpointCall call;   // checkpoints
    std::uint32_t body_begin = 0;  // checkpoints: the first statement of its body in the log
    driver::TapeMark mark;         // try: what its body records is discarded if it catches
  };
  struct Skip {
    bool active = false;
    bool until_step = false;  // an uncaught exception: skip the rest of the step
    int depth = 0;            // blocks opened while skipping
  };

  // Statements; `at` is the statement's place in the log.
  void run_statement(std::uint32_t at);
  const char* raises_here(const spec::Statement& s) const;
  void execute(const spec::Statement& s, std::uint32_t at);
  void open_scope(const spec::Statement& s, std::uint32_t at);
  void close_scope(std::uint32_t at);
  void exit_scope(Scope& scope, bool exceptional, std::uint32_t body_end);
  void skip(const spec::Statement& s);
  void unwind(const ModelException& e, std::uint32_t at);
  void end_step();

  // The driver's host.
  [[noreturn]] void raise(const spec::AnyEvent* event, spec::RaisedException raised);
  void event_fired(const spec::AnyEvent&, const std::optional<spec::RaisedException>&) {}
  void run_body(const Body& body);  // a recompute replays the body as its own context
  void node_gradient(driver::Node<ModelTraits>&) {}
  void drop_saved(ModelTraits::NodePayload&) {}
  void take_saved(driver::Node<ModelTraits>&, driver::NonReentrantFrame<ModelTraits>::Slot&, CaptureId) {}
  void forget_twin(ModelTraits::NodePayload&) {}
  void encode_body(statemachine::Encoder& out, const Body& body) const;

  // Hooks: count, then forward to the observer.
  void forward_update() override;
  void backward_update() override;
  void discard_forward_amax() override;
  void registered(ModuleId m) override;
  void stash(ModuleId m) override;
  void save_for_restore(ModuleId m) override;
  void pop_stash(ModuleId m) override;
  void restore(ModuleId m) override;
  void stash_for(ModuleId m, CaptureId c) override;
  void replay_stash(ModuleId m, CaptureId c, unsigned occurrence) override;
  void release_stash(CaptureId c) override;
  void claimed(ModuleId m, bool owner) override;
  void ownership_captured(CaptureId c) override;
  void ownership_installed(CaptureId c) override;

  Observer* observer_;
  Observer silent_;
  Machine machine_;
  ModelDriver driver_;

  // Every statement fed, in order: checkpoint bodies are slices of it, and a recompute
  // replays its slice (it never grows during a replay).
  std::vector<spec::Statement> log_;
  std::vector<Scope> scopes_;
  std::size_t base_ = 0;  // scopes below belong to the context a replay interrupted
  Skip skip_;

  int step_ = 0;
  bool step_started_ = false;
  spec::StepResult current_;
  std::vector<spec::StepResult> steps_;
};

}  // namespace fp8sm::interpreter
