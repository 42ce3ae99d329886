#include "runtime/scopes.hpp"

#include <exception>

#include "runtime/errors.hpp"

namespace fp8sm::runtime {

namespace {
// A scope's destructor leaves it as close() does, if close() was not called and the context
// still holds it open as its innermost scope (Context::destroyed_scope_is_innermost takes care
// of the others; a context already destroyed has nothing left to leave). While another
// exception unwinds, a second one would terminate the program: the exit has run, which is what
// the spec asks; what it raised is lost, as in any C++ destructor.
template <class Scope>
void leave_from_destructor(Scope& scope, int uncaught_at_entry) {
  if (std::uncaught_exceptions() > uncaught_at_entry) {
    try {
      scope.close();
    } catch (...) {
    }
    return;
  }
  scope.close();
}
}  // namespace

// ---- autocast -----------------------------------------------------------------------------

Autocast::Autocast(Context& context, bool enabled)
    : context_(context), id_(0), uncaught_at_entry_(std::uncaught_exceptions()) {
  context.enter_autocast(enabled);  // throws before the scope is open: nothing to leave
  id_ = context.open_scope(Context::ScopeKind::Autocast);
}

void Autocast::close() {
  Context& context = context_.get("autocast scope");
  context.close_scope(Context::ScopeKind::Autocast, id_);
  open_ = false;
  context.exit_scope(Context::ScopeKind::Autocast);
}

Autocast::~Autocast() noexcept(false) {
  if (open_ && context_.alive() && context_.get("autocast scope").destroyed_scope_is_innermost(id_)) {
    leave_from_destructor(*this, uncaught_at_entry_);
  }
}

// ---- no_grad ------------------------------------------------------------------------------

NoGrad::NoGrad(Context& context) : context_(context), id_(0), uncaught_at_entry_(std::uncaught_exceptions()) {
  context.grad_push(false);
  id_ = context.open_scope(Context::ScopeKind::NoGrad);
}

void NoGrad::close() {
  Context& context = context_.get("no_grad scope");
  context.close_scope(Context::ScopeKind::NoGrad, id_);
  open_ = false;
  context.exit_scope(Context::ScopeKind::NoGrad);
}

NoGrad::~NoGrad() noexcept(false) {
  if (open_ && context_.alive() && context_.get("no_grad scope").destroyed_scope_is_innermost(id_)) {
    leave_from_destructor(*this, uncaught_at_entry_);
  }
}

// ---- checkpoint ---------------------------------------------------------------------------

Tensor checkpoint(Context& context, CheckpointMode mode, const GraphFunction& function, const std::vector<Tensor>& inputs) {
  if (!function) throw std::invalid_argument("checkpoint: no function");
  const std::size_t id = context.open_scope(Context::ScopeKind::Checkpoint);
  Tensor output;
  std::exception_ptr raised;
  try {
    output = context.run_checkpoint(mode, function, inputs);
  } catch (...) {
    raised = std::current_exception();
  }
  context.close_scope(Context::ScopeKind::Checkpoint, id);
  // A scope on the heap around the call that the function destroyed is left now; what the
  // function threw (or what an exit raised in its place) goes on.
  context.leave_abandoned_scopes(raised);
  return output;
}

// The function's Matrix ops read the chain from the checkpoint's input tensor, in its forward
// and in its recompute alike.
Matrix checkpoint(Context& context, CheckpointMode mode, const CheckpointFunction& function, const Matrix& input) {
  if (!function) throw std::invalid_argument("checkpoint: no function");
  GraphFunction on_chain = [&context, function](const std::vector<Tensor>& inputs) {
    context.chain_.end = inputs[0].id;
    Matrix output = function(inputs[0].value);
    return context.tensor(std::move(output), context.chain_.end);
  };
  return context.chain_output(checkpoint(context, mode, on_chain, {context.chain_input(input, "checkpoint: input")}));
}

}  // namespace fp8sm::runtime
