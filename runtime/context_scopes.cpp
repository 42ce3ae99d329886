// The scopes a program opens (autocast, no_grad, checkpoints) in the order it leaves them,
// and a checkpoint's call: what the driver fires for each.
#include <fmt/core.h>

#include <algorithm>
#include <exception>
#include <memory>
#include <stdexcept>
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
void Context::grad_push(bool enabled) { completes(driver_->grad_push(enabled)); }

void Context::fire_exit(ScopeKind kind, std::exception_ptr& raised) {
  try {
    completes(kind == ScopeKind::Autocast ? driver_->autocast_exit() : driver_->grad_pop());
  } catch (...) {
    raised = std::current_exception();  // an outer exit's exception replaces an inner one's
  }
}

void Context::exit_scope(ScopeKind kind) {
  std::exception_ptr raised;
  fire_exit(kind, raised);
  leave_abandoned_scopes(raised);
}

void Context::leave_abandoned_scopes(std::exception_ptr raised) {
  while (!scopes_.empty() && scopes_.back().abandoned) {
    const ScopeKind outer = scopes_.back().kind;
    scopes_.pop_back();
    fire_exit(outer, raised);
  }
  if (raised) std::rethrow_exception(raised);
}

bool Context::destroyed_scope_is_innermost(std::size_t id) {
  const auto it = std::find_if(scopes_.begin(), scopes_.end(), [&](const OpenScope& s) { return s.id == id; });
  if (it == scopes_.end()) return false;
  if (it + 1 == scopes_.end()) return true;
  it->abandoned = true;
  return false;
}

std::string Context::leave_scopes_beyond(std::size_t depth) {
  if (scopes_.size() <= depth) return "";
  const std::string left = fmt::format("the {} scope #{}", scope_name(scopes_.back().kind), scopes_.back().id);
  // Left as abandoned scopes are, innermost first. The scope below them is open, not abandoned
  // (an abandoned scope is left as soon as it is innermost), so the leaving stops there.
  for (std::size_t i = depth; i < scopes_.size(); ++i) {
    if (scopes_[i].kind == ScopeKind::Checkpoint) {
      throw std::logic_error("a checkpoint scope outlived its checkpoint() call");  // checkpoint() always closes it
    }
    scopes_[i].abandoned = true;
  }
  leave_abandoned_scopes();
  return left;
}

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

Tensor Context::run_function(const GraphFunction& function, const std::vector<Tensor>& inputs, std::size_t scope_depth) {
  Tensor output;
  try {
    output = function(inputs);
  } catch (...) {
    leave_scopes_beyond(scope_depth);  // an exit that raises replaces the function's exception
    throw;
  }
  const std::string left = leave_scopes_beyond(scope_depth);
  if (!left.empty()) {
    throw MisuseError(fmt::format("checkpoint: the function returned with {} it opened still open (left for it now: a "
                                  "scope opened in a checkpoint's function closes before it returns)",
                                  left));
  }
  require_operand(output, "checkpoint: the function's output");
  return output;
}

// §3.5: the checkpoint's call, its function, and its end (which records the reentrant node or
// closes the frame), the end also while an exception leaves the function. A reentrant
// checkpoint's node reads the inputs and writes a tensor of its own, which the function's
// recompute at backward takes the gradient of; a non-reentrant checkpoint's nodes are the
// function's own, so its output is the function's.
Tensor Context::run_checkpoint(CheckpointMode mode, const GraphFunction& function, const std::vector<Tensor>& inputs) {
  const std::size_t scope_depth = scopes_.size();  // the checkpoint's own scope is the innermost
  for (const Tensor& input : inputs) require_operand(input, "checkpoint: an input");
  const bool reentrant = mode == CheckpointMode::Reentrant;
  driver::CheckpointCall<statemachine::GrowableStorage> call;
  // The runtime's tensors carry no requires_grad: every input counts as one that requires grad
  // (the driver's default), as a module's output and a training step's input do in TE.
  completes(driver_->checkpoint_begin(reentrant, call));
  if (call.plain) return run_function(function, inputs, scope_depth);  // spec §3.5 "Dispatch": no checkpoint at all
  const TensorId node_output = reentrant ? new_tensor() : 0;
  Tensor output;
  try {
    output = run_function(function, inputs, scope_depth);
  } catch (...) {
    auto body = std::make_shared<const CheckpointBody>(CheckpointBody{function, inputs, node_output, Shape{}});
    completes(driver_->checkpoint_end(call, true, std::move(body), nullptr));
    throw;
  }
  auto body = std::make_shared<const CheckpointBody>(CheckpointBody{function, inputs, node_output, output.value.shape()});
  if (!reentrant) {
    completes(driver_->checkpoint_end(call, false, std::move(body), nullptr));
    return output;
  }
  auto node = std::make_shared<CheckpointNode>();
  std::vector<const Tensor*> read;
  for (const Tensor& input : inputs) read.push_back(&input);
  connect(*node, read, output.value, node_output);
  completes(driver_->checkpoint_end(call, false, std::move(body), std::move(node)));
  if (call.records_node) recorded_output_ = node_output;  // the driver recorded the node
  return tensor(std::move(output.value), node_output);
}

void Context::recompute_uncaptured() { completes(driver_->recompute_uncaptured()); }

}  // namespace fp8sm::runtime
