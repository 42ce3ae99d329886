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

Matrix checkpoint(Context& context, CheckpointMode mode, const CheckpointFunction& function, const Matrix& input) {
  if (!function) throw std::invalid_argument("checkpoint: no function");
  const std::size_t id = context.open_scope(Context::ScopeKind::Checkpoint);
  Matrix output;
  try {
    output = context.run_checkpoint(mode, function, input);
  } catch (...) {
    context.close_scope(Context::ScopeKind::Checkpoint, id);
    throw;
  }
  context.close_scope(Context::ScopeKind::Checkpoint, id);
  return output;
}

// ---- relu ---------------------------------------------------------------------------------

namespace {
class ReluNode final : public NodeFunction {
 public:
  explicit ReluNode(Matrix input) : input_(std::move(input)) {}
  Matrix backward(const Matrix& grad_output) override {
    Matrix grad = grad_output;
    for (std::size_t i = 0; i < grad.values.size(); ++i) {
      if (!(input_.values[i] > 0.0f)) grad.values[i] = 0.0f;
    }
    return grad;
  }
  void drop_saved() override { input_ = Matrix{}; }
  void take_saved(NodeFunction& twin) override { input_ = static_cast<ReluNode&>(twin).input_; }
  bool is_twin(const NodeFunction& twin) const override { return dynamic_cast<const ReluNode*>(&twin) != nullptr; }

 private:
  Matrix input_;
};
}  // namespace

Matrix relu(Context& context, const Matrix& x) {
  Matrix y = x;
  for (float& v : y.values) v = v > 0.0f ? v : 0.0f;
  context.record_function(std::make_shared<ReluNode>(x));
  return y;
}

}  // namespace fp8sm::runtime
