#include "runtime/scopes.hpp"

#include "runtime/errors.hpp"

namespace fp8sm::runtime {

namespace {
// A scope's destructor leaves it if close() was not called. While another exception unwinds, a
// second one would terminate the program: the exit has run, which is what the spec asks; what
// it raised is lost, as in any C++ destructor.
template <class Scope>
void leave_from_destructor(Scope& scope, bool open, int uncaught_at_entry) {
  if (!open) return;
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
  context_.enter_autocast(enabled);  // throws before the scope is open: nothing to leave
  id_ = context_.open_scope(Context::ScopeKind::Autocast);
}

void Autocast::close() {
  context_.close_scope(Context::ScopeKind::Autocast, id_);
  open_ = false;
  context_.exit_autocast();
}

Autocast::~Autocast() noexcept(false) { leave_from_destructor(*this, open_, uncaught_at_entry_); }

// ---- no_grad ------------------------------------------------------------------------------

NoGrad::NoGrad(Context& context) : context_(context), id_(0), uncaught_at_entry_(std::uncaught_exceptions()) {
  context_.grad_push(false);
  id_ = context_.open_scope(Context::ScopeKind::NoGrad);
}

void NoGrad::close() {
  context_.close_scope(Context::ScopeKind::NoGrad, id_);
  open_ = false;
  context_.grad_pop();
}

NoGrad::~NoGrad() noexcept(false) { leave_from_destructor(*this, open_, uncaught_at_entry_); }

// ---- checkpoint ---------------------------------------------------------------------------

Tensor checkpoint(Context& context, CheckpointMode mode, const GraphFunction& function, const std::vector<Tensor>& inputs) {
  if (!function) throw std::invalid_argument("checkpoint: no function");
  const std::size_t id = context.open_scope(Context::ScopeKind::Checkpoint);
  Tensor output;
  try {
    output = context.run_checkpoint(mode, function, inputs);
  } catch (...) {
    context.close_scope(Context::ScopeKind::Checkpoint, id);
    throw;
  }
  context.close_scope(Context::ScopeKind::Checkpoint, id);
  return output;
}

// The function's Matrix ops read the chain from the checkpoint's input tensor, in its forward
// and in its recompute alike.
Matrix checkpoint(Context& context, CheckpointMode mode, const CheckpointFunction& function, const Matrix& input) {
  if (!function) throw std::invalid_argument("checkpoint: no function");
  GraphFunction on_chain = [&context, function](const std::vector<Tensor>& inputs) {
    context.chain_.end = inputs[0].id;
    Matrix output = function(inputs[0].value);
    return Tensor{std::move(output), context.chain_.end};
  };
  return context.chain_output(checkpoint(context, mode, on_chain, {context.chain_input(input)}));
}

}  // namespace fp8sm::runtime
