// Statements, blocks, `try`, exceptions and steps: the program's control flow. What each
// operation fires into the table is the driver's (driver/driver.hpp); the packing of the state
// for the explorer is interpreter_encoding.cpp.
#include "interpreter/interpreter.hpp"

#include <limits>
#include <stdexcept>
#include <utility>

namespace fp8sm::interpreter {

using spec::Op;
using spec::RaisedException;
using spec::Statement;

namespace {

ModelException user_exception(const char* statement) {
  return ModelException{RaisedException{spec::ExceptionKind::UserError, std::string("raised by '") + statement + "'"}};
}

}  // namespace

Interpreter::Interpreter(spec::Semantics semantics, Observer* observer)
    : observer_(observer != nullptr ? observer : &silent_),
      machine_(semantics, this),
      driver_(machine_, *this, *observer_) {
  observer_->attach(machine_);
}

Interpreter::Interpreter(const Interpreter& other, Observer* observer)
    : observer_(observer != nullptr ? observer : &silent_),
      machine_(other.machine_),
      driver_(other.driver_, machine_, *this, *observer_),
      log_(other.log_),
      scopes_(other.scopes_),
      base_(other.base_),
      skip_(other.skip_),
      step_(other.step_),
      step_started_(other.step_started_),
      current_(other.current_),
      steps_(other.steps_) {
  // Only ever copied between statements, when no recompute runs.
  machine_.set_hooks(this);
  observer_->attach(machine_);
}

void Interpreter::assign(const Interpreter& other) {
  if (this == &other) return;
  machine_ = other.machine_;
  machine_.set_hooks(this);
  driver_.assign(other.driver_);
  log_ = other.log_;
  scopes_ = other.scopes_;
  base_ = other.base_;
  skip_ = other.skip_;
  step_ = other.step_;
  step_started_ = other.step_started_;
  current_ = other.current_;
  steps_ = other.steps_;
  observer_->attach(machine_);
}

void Interpreter::run(const spec::Program& program) {
  for (const Statement& s : program.statements) feed(s);
  end_of_file();
}

// ---- feeding statements -----------------------------------------------------------------

void Interpreter::feed(const Statement& s) {
  if (s.op == Op::Step) {
    end_step();
    return;
  }
  if (log_.size() >= std::numeric_limits<std::uint32_t>::max()) {
    throw std::length_error("Interpreter: more than 2^32 - 1 statements");
  }
  const auto at = static_cast<std::uint32_t>(log_.size());
  log_.push_back(s);
  run_statement(at);
}

// One statement of the log, fed at top level or replayed by a recompute. A checkpoint's body
// is its statements as written, the skipped ones too: a recompute may take a path the
// original forward did not (raise original / raise recompute).
void Interpreter::run_statement(std::uint32_t at) {
  const Statement& s = log_[at];
  if (!step_started_) {
    step_started_ = true;
    observer_->step_begin(step_);
  }
  if (skip_.active) {
    skip(s);
    return;
  }
  // unwind rethrows when a replay's body raised and nothing in it caught. A raise statement
  // goes to it without a C++ throw: raises are a good part of what the explorer executes, and
  // unwinding the stack cost a tenth of its time.
  if (const char* raising = raises_here(s)) {
    unwind(user_exception(raising), at);
  } else {
    try {
      execute(s, at);
    } catch (const ModelException& e) {
      unwind(e, at);
    }
  }
  if (driver_.recompute_depth() == 0 && scopes_.empty()) observer_->top_level_statement_done();
}

void Interpreter::end_of_file() {
  if (step_started_) end_step();
}

void Interpreter::skip(const Statement& s) {
  if (spec::opens_block(s.op)) {
    ++skip_.depth;
  } else if (s.op == Op::Close) {
    if (skip_.depth > 0) {
      --skip_.depth;
    } else if (!skip_.until_step) {
      // The close of the `try` that caught the exception.
      scopes_.pop_back();
      skip_ = Skip{};
      if (driver_.recompute_depth() == 0 && scopes_.empty()) observer_->top_level_statement_done();
    }
  }
}

// The statement the exception of `s` names, if `s` raises when run now.
const char* Interpreter::raises_here(const Statement& s) const {
  switch (s.op) {
    case Op::RaiseAlways:
      return "raise always";
    case Op::RaiseOriginal:
      return driver_.recompute_depth() == 0 ? "raise original" : nullptr;
    case Op::RaiseRecompute:
      return driver_.recompute_depth() > 0 ? "raise recompute" : nullptr;
    default:
      return nullptr;
  }
}

void Interpreter::execute(const Statement& s, std::uint32_t at) {
  switch (s.op) {
    case Op::AutocastOn:
    case Op::AutocastOff:
    case Op::CheckpointReentrant:
    case Op::CheckpointNonReentrant:
    case Op::NoGrad:
    case Op::Try:
      open_scope(s, at);
      return;
    case Op::Close:
      close_scope(at);
      return;
    case Op::Linear:
      // §3.2: the casts read the live meta; a model node keeps nothing for its backward.
      driver_.module_forward_begin(s.name);
      driver_.module_forward_end(s.name, {});
      return;
    case Op::RaiseAlways:
    case Op::RaiseOriginal:
    case Op::RaiseRecompute:
      return;  // raising is run_statement's (raises_here); otherwise they do nothing
    case Op::RecomputeUncaptured:
      driver_.recompute_uncaptured();
      return;
    case Op::Save:
      driver_.save(s.name);
      return;
    case Op::Backward:
      driver_.backward(s.name, s.retain);
      return;
    case Op::Step:
      return;  // handled by feed
  }
}

// ---- blocks -------------------------------------------------------------------------------

void Interpreter::open_scope(const Statement& s, std::uint32_t at) {
  Scope scope;
  scope.op = s.op;
  scope.body_begin = at + 1;
  switch (s.op) {
    case Op::AutocastOn:
    case Op::AutocastOff:
      driver_.autocast_enter(s.op == Op::AutocastOn);
      break;
    case Op::NoGrad:
      driver_.grad_push(false);
      break;
    case Op::Try:
      scope.mark = driver_.mark();
      break;
    case Op::CheckpointReentrant:
    case Op::CheckpointNonReentrant:
      scope.call = driver_.checkpoint_begin(s.op == Op::CheckpointReentrant);
      break;
    default:
      return;
  }
  scopes_.push_back(scope);
}

void Interpreter::close_scope(std::uint32_t at) {
  Scope scope = scopes_.back();
  scopes_.pop_back();
  exit_scope(scope, false, at);
}

// Leaving a block, normally or while an exception unwinds through it (Python `with` rules:
// every exit runs and sees the exception; none swallows it). Its body ends before `body_end`.
void Interpreter::exit_scope(Scope& scope, bool exceptional, std::uint32_t body_end) {
  switch (scope.op) {
    case Op::AutocastOn:
    case Op::AutocastOff:
      driver_.autocast_exit();
      break;
    case Op::NoGrad:
      driver_.grad_pop();
      break;
    case Op::CheckpointReentrant:
    case Op::CheckpointNonReentrant:
      driver_.checkpoint_end(scope.call, exceptional, Body{scope.body_begin, body_end});
      break;
    default:
      break;
  }
}

// An exception raised by the statement at `at`: every block of the current context exits,
// innermost first, until a `try` catches it. Uncaught at top level it ends the step; uncaught
// in a replayed body it propagates out of the recompute.
void Interpreter::unwind(const ModelException& e, std::uint32_t at) {
  int unwound = 0;  // blocks exited here: their closing braces are still to come
  while (scopes_.size() > base_) {
    Scope& scope = scopes_.back();
    if (scope.op == Op::Try) {
      driver_.discard_since(scope.mark);  // what the try body recorded is never backpropagated
      skip_ = Skip{true, false, unwound};
      return;
    }
    Scope popped = scope;
    scopes_.pop_back();
    exit_scope(popped, true, at + 1);
    ++unwound;
  }
  if (driver_.recompute_depth() > 0) throw e;
  current_.raised.push_back(e.raised);
  observer_->exception_escaped(e.raised);
  // The step's backward is skipped: what the step recorded (and did not save) is never
  // backpropagated.
  driver_.abandon_step_graph();
  skip_ = Skip{true, true, 0};
}

void Interpreter::end_step() {
  if (!step_started_) observer_->step_begin(step_);
  driver_.end_step();  // the step's graph goes; saved tapes stay
  observer_->step_end(step_);
  steps_.push_back(std::move(current_));
  current_ = spec::StepResult{};
  skip_ = Skip{};
  scopes_.clear();  // already empty: `step` stands outside every block
  ++step_;
  step_started_ = false;
}

// ---- the driver's host --------------------------------------------------------------------------

void Interpreter::raise(const spec::AnyEvent* /*event*/, spec::RaisedException raised) {
  throw ModelException{std::move(raised)};
}

// Runs a checkpoint's body again as its own context: an exception no `try` of the body
// catches leaves the replay (and the driver's recompute, which exits its scopes).
void Interpreter::run_body(const Body& body) {
  const std::size_t outer_base = base_;
  base_ = scopes_.size();
  try {
    for (std::uint32_t at = body.begin; at < body.end; ++at) run_statement(at);
  } catch (...) {
    base_ = outer_base;
    throw;
  }
  base_ = outer_base;
}

// ---- hooks ------------------------------------------------------------------------------------

void Interpreter::forward_update() {
  ++current_.forward_updates;
  observer_->forward_update();
}
void Interpreter::backward_update() {
  ++current_.backward_updates;
  observer_->backward_update();
}
void Interpreter::discard_forward_amax() { observer_->discard_forward_amax(); }
void Interpreter::registered(ModuleId m) { observer_->registered(m); }
void Interpreter::stash(ModuleId m) { observer_->stash(m); }
void Interpreter::save_for_restore(ModuleId m) { observer_->save_for_restore(m); }
void Interpreter::pop_stash(ModuleId m) { observer_->pop_stash(m); }
void Interpreter::restore(ModuleId m) { observer_->restore(m); }
void Interpreter::stash_for(ModuleId m, CaptureId c) { observer_->stash_for(m, c); }
void Interpreter::replay_stash(ModuleId m, CaptureId c, unsigned occurrence) {
  observer_->replay_stash(m, c, occurrence);
}
void Interpreter::release_stash(CaptureId c) { observer_->release_stash(c); }
void Interpreter::claimed(ModuleId m, bool owner) {
  driver_.claimed(owner);
  observer_->claimed(m, owner);
}
void Interpreter::ownership_captured(CaptureId c) { observer_->ownership_captured(c); }
void Interpreter::ownership_installed(CaptureId c) { observer_->ownership_installed(c); }

}  // namespace fp8sm::interpreter
