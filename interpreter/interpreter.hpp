// Runs a scenario on the model: turns each statement into the driver's operations (spec §3's
// composite operations are the driver's, shared with the runtime), keeps the program's blocks,
// `try`, exceptions and steps. Shared by every semantics.
//
// Statements are fed one at a time, exactly as a program grows; the interpreter keeps them in
// a log, and a checkpoint's body is the slice of it that its recompute replays. Every
// statement costs time independent of how deep it is nested (the work of recomputes aside,
// which is the program's own).
//
// What the interpreter keeps between statements is an InterpreterState: the machine's state,
// the driver's tape and ledger, the log, the open blocks and the step. It is plain data over
// a storage (statemachine/storage.hpp): an Interpreter owns a growable one; the exhaustive
// search keeps flat ones inside its state values and binds a FlatInterpreter to the one it
// expands.
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
#include "statemachine/machine.hpp"
#include "statemachine/observer.hpp"
#include "statemachine/storage.hpp"

namespace fp8sm::interpreter {

using statemachine::CaptureId;
using statemachine::ModuleId;
using statemachine::Observer;

template <class S>
class BasicInterpreter;

// A checkpoint's body: the statements [begin, end) of the interpreter's statement log (every
// statement fed to it, in order). A slice, not a copy, so that nested checkpoints cost no
// more than the statements they hold. And its input, of which the model knows one thing:
// whether it requires grad (a recompute runs on the input the original call had).
template <class S>
struct Body {
  typename S::Id begin = 0;
  typename S::Id end = 0;
  bool input_requires_grad = true;
};

// The interpreter as the driver's host: a node keeps no tensors, only whether its input
// required grad; a body is a slice of the log.
template <class S>
struct ModelTraits {
  using Storage = S;
  using Host = BasicInterpreter<S>;
  // What TE's Linear keeps in its autograd context of its input (ctx.requires_dgrad): its
  // backward branches on it (no input gradient for data). No invariant of the model reads it,
  // but the search's states are also the program list TE is tested on (docs/conformance.md),
  // and a TE that claimed on the input's grad would tell `data; autocast on { linear L0` from
  // `autocast on { linear L0`, so the model keeps them apart too. A byte, not a bool: the
  // search hashes nodes and slots as bytes.
  struct NodePayload {
    std::uint8_t input_requires_grad = 1;
  };
  using Body = interpreter::Body<S>;
};
template <class S>
using ModelDriver = driver::Driver<ModelTraits<S>>;

// A statement as the log keeps it (no source position).
struct LoggedStatement {
  spec::Op op = spec::Op::Step;
  bool retain = false;
  std::uint16_t name = 0;
};

namespace capacity {
FP8SM_CAPACITY(Log, 24, "statements");
FP8SM_CAPACITY(Scopes, 16, "open blocks");
FP8SM_CAPACITY(Raised, 2, "exceptions escaping one step");
}  // namespace capacity

// A step's counts so far and the exceptions that escaped it (spec::StepResult without the
// violations, which are the observers').
struct StepTally {
  std::uint32_t forward_updates = 0;
  std::uint32_t backward_updates = 0;
  statemachine::BoundedVector<spec::RaisedException, capacity::Raised::kCapacity, capacity::Raised> raised;
  spec::StepResult result() const;
};

template <class S>
struct InterpreterState {
  using Id = typename S::Id;
  template <class T, class Tag>
  using List = typename S::template List<T, Tag>;

  struct Scope {
    spec::Op op = spec::Op::Try;
    Id body_begin = 0;            // checkpoints: the first statement of its body in the log
    driver::CheckpointCall<S> call;  // checkpoints
    driver::TapeMark<S> mark;     // try: what its body records is discarded if it catches
    bool requires_grad = true;    // no_grad, try: the chain's flag at its opening (see resume_chain)
  };
  struct Skip {
    bool active = false;
    bool until_step = false;  // an uncaught exception: skip the rest of the step
    std::uint16_t depth = 0;  // blocks opened while skipping
  };

  statemachine::MachineState<S> machine;
  driver::DriverState<ModelTraits<S>> driver;
  // Every statement fed, in order: checkpoint bodies are slices of it, and a recompute
  // replays its slice (it never grows during a replay).
  List<LoggedStatement, capacity::Log> log;
  List<Scope, capacity::Scopes> scopes;
  Id base = 0;  // scopes below belong to the context a replay interrupted
  Skip skip;
  std::uint32_t step = 0;
  bool step_started = false;
  StepTally current;
  // Whether the chain's value requires grad (docs/scenarios.md "The graph and backward"),
  // which a reentrant checkpoint's call reads. Tracked where grad is on: a module run with grad
  // off leaves it as it was (nothing reads it before grad is on again, and what turns grad on
  // again sets it: a no_grad block's end, a reentrant checkpoint's, a recompute's).
  bool requires_grad = true;
  // The last close (a save, a backward of the current graph without retain, data): whether the
  // input it restarted the chain from requires grad, and how many blocks were open then. A
  // no_grad block, or a try that caught, among those resumes from that input at its end.
  bool restart_requires_grad = true;
  Id closed_inside = 0;
};

template <class S>
class BasicInterpreter : private statemachine::Hooks {
 public:
  using State = InterpreterState<S>;

  static State initial_state(spec::Semantics semantics);

  // An interpreter owning a fresh state. `observer` (may be nullptr) must outlive it.
  BasicInterpreter(spec::Semantics semantics, Observer* observer);
  // An interpreter bound to `state` (see bind()).
  BasicInterpreter(State& state, Observer* observer);
  BasicInterpreter(const BasicInterpreter&) = delete;
  BasicInterpreter& operator=(const BasicInterpreter&) = delete;

  // From now on the interpreter runs on `state` (between two statements), which must outlive
  // the binding.
  void bind(State& state);
  const State& state() const { return *state_; }

  // Runs a whole program: every statement, then the end of file.
  void run(const spec::Program& program);

  void feed(const spec::Statement& statement);
  void end_of_file();

  // Drops the statements of the log that no body can replay any more: those outside every body
  // a checkpoint holds (a reentrant record's, a non-reentrant frame's, an open checkpoint's). A
  // body opened later starts after them, so they are never read again. Between two statements
  // only; the bodies' places move down with the log (bodies nest or lie apart, so each stays
  // one slice).
  void forget_unreadable_log();

  // Whether finished steps are kept (steps()); the exhaustive search keeps none.
  void keep_steps(bool keep) { keep_steps_ = keep; }
  // One result per step so far (counts and escaped exceptions; violations are the observers').
  const std::vector<spec::StepResult>& steps() const { return steps_; }
  // The step that ended last (after `step` or the end of the file).
  const StepTally& last_step() const { return last_step_; }

  const statemachine::BasicMachine<S>& machine() const { return machine_; }
  statemachine::BasicMachine<S>& machine() { return machine_; }
  int recompute_depth() const { return driver_.recompute_depth(); }
  // Whether the next statement will be skipped (an exception is being carried to a `try`'s
  // close or to the step's end).
  bool skipping() const { return state_->skip.active; }
  // Whether the chain's value requires grad now.
  bool chain_requires_grad() const { return state_->requires_grad; }
  // Whether grad is on and the chain's value does not require it: a reentrant checkpoint called
  // now records no node (torch's rule), so its body's modules get no gradient.
  bool input_lacks_grad() const { return machine_.grad_enabled() && !state_->requires_grad; }

 private:
  friend ModelDriver<S>;
  using Id = typename S::Id;
  using Scope = typename State::Scope;
  using Skip = typename State::Skip;

  using Done = driver::Done;

  // Statements; `at` is the statement's place in the log. Done::Raising: an exception is in
  // flight (in_flight_) and leaves the context (a replayed body) the statement ran in.
  Done run_statement(std::size_t at);
  const char* raises_here(const LoggedStatement& s) const;
  Done execute(const LoggedStatement& s, std::size_t at);
  Done open_scope(const LoggedStatement& s, std::size_t at);
  Done close_scope(std::size_t at);
  Done exit_scope(Scope& scope, bool exceptional, std::size_t body_end);
  void skip(const LoggedStatement& s);
  void restart_chain(bool requires_grad);
  void resume_chain(const Scope& scope, std::size_t position);
  Done unwind(std::size_t at);
  void end_step();
  bool at_top_level() const { return driver_.recompute_depth() == 0 && state_->scopes.empty(); }

  // The driver's host: a raise becomes the exception in flight, which the driver and the
  // statements return to the nearest `try`, recompute or step (no C++ exception).
  void raise(const spec::AnyEvent* event, spec::RaisedException raised);
  void event_fired(const spec::AnyEvent&, const std::optional<spec::RaisedException>&) {}
  Done run_body(const Body<S>& body);  // a recompute replays the body as its own context
  void node_gradient(driver::Node<ModelTraits<S>>&) {}
  void drop_saved(typename ModelTraits<S>::NodePayload&) {}
  void take_saved(driver::Node<ModelTraits<S>>&, driver::RecomputedSlot<ModelTraits<S>>&, CaptureId) {}
  void forget_twin(typename ModelTraits<S>::NodePayload&) {}

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

  State own_;  // the state of an owning interpreter
  State* state_;
  Observer* observer_;
  Observer silent_;
  statemachine::BasicMachine<S> machine_;
  ModelDriver<S> driver_;

  spec::RaisedException in_flight_;  // the exception being raised, while one is
  bool keep_steps_ = true;
  std::vector<spec::StepResult> steps_;
  StepTally last_step_;
};

using Interpreter = BasicInterpreter<statemachine::GrowableStorage>;
using FlatInterpreter = BasicInterpreter<statemachine::FlatStorage>;

}  // namespace fp8sm::interpreter
