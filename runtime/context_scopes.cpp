// The scopes a program opens (autocast, no_grad, checkpoints) in the order it leaves them,
// and a checkpoint's call: what the driver fires for each.
#include <fmt/core.h>

#include <algorithm>
#include <stdexcept>
#include <memory>
#include <string>
#include <utility>

#include "driver/driver.hpp"
#include "runtime/context.hpp"
#include "runtime/errors.hpp"

namespace fp8sm::runtime {

// ---- scopes ---------------------------------------------------------------------------------

const char* Context::scope_name(ScopeKind kind) {
  switch (kind) {
    case ScopeKind::Autocast: return "autocast";
    case ScopeKind::NoGrad: return "no_grad";
    case ScopeKind::Checkpoint: return "checkpoint";
  }
  return "scope";
}

std::size_t Context::open_scope(ScopeKind kind) {
  scopes_.push_back(OpenScope{kind, next_scope_});
  if (kind == ScopeKind::Checkpoint) ++checkpoints_open_;
  return next_scope_++;
}

void Context::close_scope(ScopeKind kind, std::size_t id) {
  const auto it = std::find_if(scopes_.begin(), scopes_.end(), [&](const OpenScope& s) { return s.id == id; });
  if (it == scopes_.end()) {
    throw MisuseError(fmt::format("{} scope #{} left twice: it is not open (each scope is left once)", scope_name(kind), id));
  }
  if (it + 1 != scopes_.end()) {
    throw MisuseError(fmt::format(
        "{} scope #{} left out of order: the {} scope #{} opened inside it is still open (scopes close innermost first)",
        scope_name(kind), id, scope_name(scopes_.back().kind), scopes_.back().id));
  }
  if (kind == ScopeKind::Checkpoint) --checkpoints_open_;
  scopes_.pop_back();
}

void Context::enter_autocast(bool enabled) { completes(driver_->autocast_enter(enabled)); }
void Context::exit_autocast() { completes(driver_->autocast_exit()); }
void Context::grad_push(bool enabled) { completes(driver_->grad_push(enabled)); }
void Context::grad_pop() { completes(driver_->grad_pop()); }

// A reentrant checkpoint's node keeps no tensor of its own (its body keeps the inputs): under a
// non-reentrant frame its twin is only checked to be a checkpoint too.
class CheckpointNode final : public NodeFunction {
 public:
  std::vector<Matrix> backward(const Matrix& /*grad_output*/) override {  // never called: the driver recomputes
    throw std::logic_error("a reentrant checkpoint's node is backpropagated through its recompute");
  }
  void drop_saved() override {}
  void take_saved(NodeFunction& /*twin*/) override {}
  bool is_twin(const NodeFunction& twin) const override { return dynamic_cast<const CheckpointNode*>(&twin) != nullptr; }
};

// §3.5: the checkpoint's call, its function, and its end (which records the reentrant node or
// closes the frame), the end also while an exception leaves the function. A reentrant
// checkpoint's node reads the inputs and writes a tensor of its own, which the function's
// recompute at backward takes the gradient of; a non-reentrant checkpoint's nodes are the
// function's own, so its output is the function's.
Tensor Context::run_checkpoint(CheckpointMode mode, const GraphFunction& function, const std::vector<Tensor>& inputs) {
  const bool reentrant = mode == CheckpointMode::Reentrant;
  const bool grad_at_call = machine_->grad_enabled();
  driver::CheckpointCall<statemachine::GrowableStorage> call;
  completes(driver_->checkpoint_begin(reentrant, call));
  if (call.plain) return function(inputs);  // spec §3.5 "Dispatch": no checkpoint at all
  const TensorId node_output = reentrant ? new_tensor() : 0;
  auto body = std::make_shared<const CheckpointBody>(CheckpointBody{function, inputs, node_output});
  Tensor output;
  try {
    output = function(inputs);
  } catch (...) {
    completes(driver_->checkpoint_end(call, true, std::move(body), nullptr));
    throw;
  }
  if (!reentrant) {
    completes(driver_->checkpoint_end(call, false, std::move(body), nullptr));
    return output;
  }
  auto node = std::make_shared<CheckpointNode>();
  for (const Tensor& input : inputs) node->inputs.push_back(input.id);
  node->output = node_output;
  completes(driver_->checkpoint_end(call, false, std::move(body), std::move(node)));
  if (grad_at_call) recorded_output_ = node_output;  // the driver recorded the node
  return Tensor{std::move(output.value), node_output};
}

void Context::recompute_uncaptured() { completes(driver_->recompute_uncaptured()); }

}  // namespace fp8sm::runtime
