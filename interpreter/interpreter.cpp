// Statements, blocks, `try`, exceptions and steps: the program's control flow. What each
// operation fires into the table is the driver's (driver/driver.hpp). Compiled for both
// storages (the end of this file).
#include "interpreter/interpreter.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <utility>

namespace fp8sm::interpreter {

using spec::Op;
using spec::RaisedException;
using spec::Statement;
using statemachine::to_id;

namespace {


LoggedStatement logged(const Statement& s) { return LoggedStatement{s.op, s.retain, s.name}; }

}  // namespace

spec::StepResult StepTally::result() const {
  spec::StepResult r;
  r.forward_updates = static_cast<int>(forward_updates);
  r.backward_updates = static_cast<int>(backward_updates);
  r.raised.assign(raised.begin(), raised.end());
  return r;
}

template <class S>
typename BasicInterpreter<S>::State BasicInterpreter<S>::initial_state(spec::Semantics semantics) {
  State state;
  state.machine = statemachine::BasicMachine<S>::initial_state(semantics);
  return state;
}

template <class S>
BasicInterpreter<S>::BasicInterpreter(spec::Semantics semantics, Observer* observer)
    : own_(initial_state(semantics)),
      state_(&own_),
      observer_(observer != nullptr ? observer : &silent_),
      machine_(own_.machine, this),
      driver_(machine_, *this, *observer_, own_.driver) {}

template <class S>
BasicInterpreter<S>::BasicInterpreter(State& state, Observer* observer)
    : state_(&state),
      observer_(observer != nullptr ? observer : &silent_),
      machine_(state.machine, this),
      driver_(machine_, *this, *observer_, state.driver) {}

template <class S>
void BasicInterpreter<S>::bind(State& state) {
  state_ = &state;
  machine_.bind(state.machine);
  driver_.bind(state.driver);
}

template <class S>
void BasicInterpreter<S>::run(const spec::Program& program) {
  for (const Statement& s : program.statements) feed(s);
  end_of_file();
}

// ---- feeding statements -----------------------------------------------------------------

template <class S>
void BasicInterpreter<S>::feed(const Statement& s) {
  if (s.op == Op::Step) {
    end_step();
    return;
  }
  if (state_->log.size() >= std::numeric_limits<Id>::max() - 1u) {
    throw statemachine::CapacityError(
        fmt::format("the program needs more than {} statements", std::numeric_limits<Id>::max() - 1u));
  }
  const std::size_t at = state_->log.size();
  state_->log.push_back(logged(s));
  // At top level every exception is caught: by a `try`, or by the step it ends.
  (void)run_statement(at);
}

template <class S>
void BasicInterpreter<S>::forget_unreadable_log() {
  State& st = *state_;
  const std::size_t n = st.log.size();
  // The statements some body holds: a reentrant record's, a closed non-reentrant frame's (a
  // frame's body is set when its forward ends; until then its open scope names it), an open
  // checkpoint's so far.
  std::vector<bool> read(n, false);
  auto hold = [&](std::size_t begin, std::size_t end) {
    for (std::size_t at = begin; at < end && at < n; ++at) read[at] = true;
  };
  for (const Scope& scope : st.scopes) {
    if (spec::is_checkpoint(scope.op)) hold(scope.body_begin, n);
  }
  for (const auto& record : st.driver.records) hold(record.body.begin, record.body.end);
  for (const auto& frame : st.driver.frames) {
    if (frame.closed) hold(frame.body.begin, frame.body.end);
  }
  // kept_before[p]: the statements kept before place p, which is p's place once the others go.
  std::vector<std::size_t> kept_before(n + 1, 0);
  for (std::size_t at = 0; at < n; ++at) kept_before[at + 1] = kept_before[at] + (read[at] ? 1 : 0);
  if (kept_before[n] == n) return;
  std::size_t kept = 0;
  for (std::size_t at = 0; at < n; ++at) {
    if (read[at]) st.log[kept++] = st.log[at];
  }
  st.log.resize(kept);
  auto moved = [&](Id place) { return to_id<S>(kept_before[std::min<std::size_t>(place, n)]); };
  for (Scope& scope : st.scopes) {
    if (spec::is_checkpoint(scope.op)) scope.body_begin = moved(scope.body_begin);
  }
  for (auto& record : st.driver.records) {
    record.body.begin = moved(record.body.begin);
    record.body.end = moved(record.body.end);
  }
  for (auto& frame : st.driver.frames) {
    if (!frame.closed) continue;
    frame.body.begin = moved(frame.body.begin);
    frame.body.end = moved(frame.body.end);
  }
}

// One statement of the log, fed at top level or replayed by a recompute. A checkpoint's body
// is its statements as written, the skipped ones too: a recompute may take a path the
// original forward did not (raise original / raise recompute).
template <class S>
driver::Done BasicInterpreter<S>::run_statement(std::size_t at) {
  const LoggedStatement s = state_->log[at];
  if (!state_->step_started) {
    state_->step_started = true;
    observer_->step_begin(state_->step);
  }
  if (state_->skip.active) {
    skip(s);
    return Done::Normally;
  }
  Done done = Done::Normally;
  if (const char* raising = raises_here(s)) {
    in_flight_ = RaisedException{spec::ExceptionKind::UserError, raising};
    done = Done::Raising;
  } else {
    done = execute(s, at);
  }
  // What is not caught here leaves the replay it ran in (a recompute's body).
  if (done == Done::Raising && unwind(at) == Done::Raising) return Done::Raising;
  if (at_top_level()) observer_->top_level_statement_done();
  return Done::Normally;
}

template <class S>
void BasicInterpreter<S>::end_of_file() {
  if (state_->step_started) end_step();
}

template <class S>
void BasicInterpreter<S>::skip(const LoggedStatement& s) {
  Skip& skip = state_->skip;
  if (spec::opens_block(s.op)) {
    ++skip.depth;
  } else if (s.op == Op::Close) {
    if (skip.depth > 0) {
      --skip.depth;
    } else if (!skip.until_step) {
      // The close of the `try` that caught the exception.
      state_->scopes.pop_back();
      skip = Skip{};
      if (at_top_level()) observer_->top_level_statement_done();
    }
  }
}

// The message of the exception `s` raises when run now (naming the statement), if it does.
template <class S>
const char* BasicInterpreter<S>::raises_here(const LoggedStatement& s) const {
  switch (s.op) {
    case Op::RaiseAlways:
      return "raised by 'raise always'";
    case Op::RaiseOriginal:
      return driver_.recompute_depth() == 0 ? "raised by 'raise original'" : nullptr;
    case Op::RaiseRecompute:
      return driver_.recompute_depth() > 0 ? "raised by 'raise recompute'" : nullptr;
    default:
      return nullptr;
  }
}

template <class S>
driver::Done BasicInterpreter<S>::execute(const LoggedStatement& s, std::size_t at) {
  switch (s.op) {
    case Op::AutocastOn:
    case Op::AutocastOff:
    case Op::CheckpointReentrant:
    case Op::CheckpointNonReentrant:
    case Op::NoGrad:
    case Op::Try:
      return open_scope(s, at);
    case Op::Close:
      return close_scope(at);
    case Op::Linear: {
      // §3.2: the casts read the live meta; a model node keeps whether its input required
      // grad. With grad on its output requires grad (its weight does).
      bool fp8 = false;
      if (driver_.module_forward_begin(s.name, fp8) == Done::Raising) return Done::Raising;
      const typename ModelTraits<S>::NodePayload node{static_cast<std::uint8_t>(state_->requires_grad)};
      if (driver_.module_forward_end(s.name, node) == Done::Raising) return Done::Raising;
      if (machine_.grad_enabled()) state_->requires_grad = true;
      return Done::Normally;
    }
    case Op::RaiseAlways:
    case Op::RaiseOriginal:
    case Op::RaiseRecompute:
      return Done::Normally;  // raising is run_statement's (raises_here); otherwise they do nothing
    case Op::RecomputeUncaptured:
      return driver_.recompute_uncaptured();
    case Op::Save:
      restart_chain(true);
      return driver_.save(s.name);
    case Op::Backward:
      // The current graph is gone even if its backward fails.
      if (s.name == spec::kCurrentGraph && !s.retain) restart_chain(true);
      return driver_.backward(s.name, s.retain);
    case Op::Data:
      restart_chain(false);
      return driver_.restart_graph();
    case Op::Step:
      return Done::Normally;  // handled by feed
  }
  return Done::Normally;
}

// ---- blocks -------------------------------------------------------------------------------

// A block whose entry raised is not open: no scope, nothing to exit.
template <class S>
driver::Done BasicInterpreter<S>::open_scope(const LoggedStatement& s, std::size_t at) {
  Scope scope;
  scope.op = s.op;
  scope.body_begin = to_id<S>(at + 1);
  scope.requires_grad = state_->requires_grad;
  // A close before this block happened outside it.
  state_->closed_inside = std::min(state_->closed_inside, to_id<S>(state_->scopes.size()));
  Done entered = Done::Normally;
  switch (s.op) {
    case Op::AutocastOn:
    case Op::AutocastOff:
      entered = driver_.autocast_enter(s.op == Op::AutocastOn);
      break;
    case Op::NoGrad:
      entered = driver_.grad_push(false);
      break;
    case Op::Try:
      scope.mark = driver_.mark();
      break;
    case Op::CheckpointReentrant:
    case Op::CheckpointNonReentrant:
      entered = driver_.checkpoint_begin(s.op == Op::CheckpointReentrant, scope.call, state_->requires_grad);
      break;
    default:
      return Done::Normally;
  }
  if (entered == Done::Raising) return Done::Raising;
  state_->scopes.push_back(scope);
  return Done::Normally;
}

template <class S>
driver::Done BasicInterpreter<S>::close_scope(std::size_t at) {
  Scope scope = state_->scopes.back();
  state_->scopes.pop_back();
  return exit_scope(scope, false, at);
}

// Leaving a block, normally or while an exception unwinds through it (Python `with` rules:
// every exit runs and sees the exception; none swallows it). Its body ends before `body_end`;
// it was popped from the open blocks. A checkpoint leaves the chain's flag as its body did: a
// non-reentrant one's output is its body's, a reentrant one's requires grad iff it recorded
// its node, so (grad on at the call) iff its input did, which its body under no-grad left as is.
template <class S>
driver::Done BasicInterpreter<S>::exit_scope(Scope& scope, bool exceptional, std::size_t body_end) {
  switch (scope.op) {
    case Op::AutocastOn:
    case Op::AutocastOff:
      return driver_.autocast_exit();
    case Op::NoGrad:
      resume_chain(scope, state_->scopes.size());
      return driver_.grad_pop();
    case Op::CheckpointReentrant:
    case Op::CheckpointNonReentrant:
      return driver_.checkpoint_end(scope.call, exceptional,
                                    Body<S>{scope.body_begin, to_id<S>(body_end), scope.call.input_requires_grad});
    default:
      return Done::Normally;
  }
}

// The exception in flight, raised by the statement at `at`: every block of the current
// context exits, innermost first (an exit that raises replaces it), until a `try` catches it.
// Uncaught at top level it ends the step; uncaught in a replayed body it leaves the recompute
// (Done::Raising).
template <class S>
driver::Done BasicInterpreter<S>::unwind(std::size_t at) {
  std::uint16_t unwound = 0;  // blocks exited here: their closing braces are still to come
  while (state_->scopes.size() > state_->base) {
    Scope& scope = state_->scopes.back();
    if (scope.op == Op::Try) {
      // What the try body recorded is never backpropagated (releasing what it held raises
      // nothing in any semantics: the exception caught here is the one that stays caught).
      (void)driver_.discard_since(scope.mark);
      resume_chain(scope, state_->scopes.size() - 1);
      state_->skip = Skip{true, false, unwound};
      return Done::Normally;
    }
    Scope popped = scope;
    state_->scopes.pop_back();
    (void)exit_scope(popped, true, at + 1);  // a raise replaced in_flight_, which goes on
    ++unwound;
  }
  if (driver_.recompute_depth() > 0) return Done::Raising;
  state_->current.raised.push_back(in_flight_);
  observer_->exception_escaped(in_flight_);
  // The step's backward is skipped: what the step recorded (and did not save) is never
  // backpropagated.
  (void)driver_.abandon_step_graph();
  state_->skip = Skip{true, true, 0};
  return Done::Normally;
}

template <class S>
void BasicInterpreter<S>::end_step() {
  if (!state_->step_started) observer_->step_begin(state_->step);
  (void)driver_.end_step();  // the step's graph goes (releasing what it held raises nothing); saved tapes stay
  observer_->step_end(state_->step);
  last_step_ = state_->current;
  if (keep_steps_) steps_.push_back(last_step_.result());
  state_->current = StepTally{};
  state_->skip = Skip{};
  state_->scopes.clear();  // already empty: `step` stands outside every block
  ++state_->step;
  state_->step_started = false;
  // Each step starts from a fresh input that requires grad.
  state_->requires_grad = state_->restart_requires_grad = true;
  state_->closed_inside = 0;
}

// A close restarts the chain from a fresh input: a leaf that requires grad (save, backward), or
// a batch of data that does not.
template <class S>
void BasicInterpreter<S>::restart_chain(bool requires_grad) {
  state_->requires_grad = state_->restart_requires_grad = requires_grad;
  state_->closed_inside = to_id<S>(state_->scopes.size());
}

// The chain after the no_grad block at `position` among the open blocks, or the try there
// that caught: its value before the block, or the input of the last close inside the block
// (docs/scenarios.md, "How the conformance harness runs a scenario").
template <class S>
void BasicInterpreter<S>::resume_chain(const Scope& scope, std::size_t position) {
  state_->requires_grad = position < state_->closed_inside ? state_->restart_requires_grad : scope.requires_grad;
}

// ---- the driver's host --------------------------------------------------------------------------

template <class S>
void BasicInterpreter<S>::raise(const spec::AnyEvent* /*event*/, spec::RaisedException raised) {
  in_flight_ = raised;
}

// Runs a checkpoint's body again as its own context: an exception no `try` of the body
// catches leaves the replay (and the driver's recompute, which exits its scopes).
template <class S>
driver::Done BasicInterpreter<S>::run_body(const Body<S>& body) {
  const Id outer_base = state_->base;
  const bool outer_requires_grad = state_->requires_grad;
  state_->base = to_id<S>(state_->scopes.size());
  state_->requires_grad = body.input_requires_grad;
  Done done = Done::Normally;
  for (std::size_t at = body.begin; at < body.end && done == Done::Normally; ++at) done = run_statement(at);
  state_->base = outer_base;
  state_->requires_grad = outer_requires_grad;
  return done;
}

// ---- hooks ------------------------------------------------------------------------------------

template <class S>
void BasicInterpreter<S>::forward_update() {
  ++state_->current.forward_updates;
  observer_->forward_update();
}
template <class S>
void BasicInterpreter<S>::backward_update() {
  ++state_->current.backward_updates;
  observer_->backward_update();
}
template <class S>
void BasicInterpreter<S>::discard_forward_amax() { observer_->discard_forward_amax(); }
template <class S>
void BasicInterpreter<S>::registered(ModuleId m) { observer_->registered(m); }
template <class S>
void BasicInterpreter<S>::stash(ModuleId m) { observer_->stash(m); }
template <class S>
void BasicInterpreter<S>::save_for_restore(ModuleId m) { observer_->save_for_restore(m); }
template <class S>
void BasicInterpreter<S>::pop_stash(ModuleId m) { observer_->pop_stash(m); }
template <class S>
void BasicInterpreter<S>::restore(ModuleId m) { observer_->restore(m); }
template <class S>
void BasicInterpreter<S>::stash_for(ModuleId m, CaptureId c) { observer_->stash_for(m, c); }
template <class S>
void BasicInterpreter<S>::replay_stash(ModuleId m, CaptureId c, unsigned occurrence) {
  observer_->replay_stash(m, c, occurrence);
}
template <class S>
void BasicInterpreter<S>::release_stash(CaptureId c) { observer_->release_stash(c); }
template <class S>
void BasicInterpreter<S>::claimed(ModuleId m, bool owner) {
  driver_.claimed(owner);
  observer_->claimed(m, owner);
}
template <class S>
void BasicInterpreter<S>::ownership_captured(CaptureId c) { observer_->ownership_captured(c); }
template <class S>
void BasicInterpreter<S>::ownership_installed(CaptureId c) { observer_->ownership_installed(c); }

template class BasicInterpreter<statemachine::GrowableStorage>;
template class BasicInterpreter<statemachine::FlatStorage>;

}  // namespace fp8sm::interpreter
