// The scopes a training program opens: FP8 autocast and no_grad as RAII objects, activation
// checkpoints as a function. They leave exactly as Python's `with` does: also while an
// exception unwinds through them, and without swallowing it.
#pragma once

#include <cstddef>
#include <exception>

#include "runtime/context.hpp"
#include "runtime/context_ref.hpp"

namespace fp8sm::runtime {

// te.fp8_autocast(enabled). close() leaves early (it throws what the state machine raises);
// the destructor leaves if close() was not called. Leaving twice, or before a scope opened
// inside it, throws MisuseError and changes nothing; so does close() after the context is gone.
// Scopes on the heap may be destroyed in any order: one destroyed while a scope inside it is
// open is left as soon as that one is (runtime/README.md, "Errors"). Leaving an FP8 region runs
// its forward update, which can fail (an amax reduction across ranks): close() a scope on the
// heap to see what its exit throws, since a destructor that throws ends the program from
// inside unique_ptr.
class Autocast {
 public:
  explicit Autocast(Context& context, bool enabled = true);
  ~Autocast() noexcept(false);
  Autocast(const Autocast&) = delete;
  Autocast& operator=(const Autocast&) = delete;
  void close();

 private:
  ContextRef context_;
  std::size_t id_;
  bool open_ = true;
  int uncaught_at_entry_;
};

// torch.no_grad().
class NoGrad {
 public:
  explicit NoGrad(Context& context);
  ~NoGrad() noexcept(false);
  NoGrad(const NoGrad&) = delete;
  NoGrad& operator=(const NoGrad&) = delete;
  void close();

 private:
  ContextRef context_;
  std::size_t id_;
  bool open_ = true;
  int uncaught_at_entry_;
};

// torch.utils.checkpoint.checkpoint(function, *inputs, use_reentrant=...): runs `function` now
// without keeping its activations, and again (the recompute) when backward reaches it. The
// function must compute the same thing both times (same modules, same order, an output of the
// same shape: CheckpointError otherwise), and what it captures by reference must outlive the
// backward. The function may read any tensors of the graph and compute any sub-graph of them;
// it returns a tensor of the context, and leaves every scope it opens (MisuseError otherwise,
// as a failure of the function: the checkpoint ends as when its function throws).
Tensor checkpoint(Context& context, CheckpointMode mode, const GraphFunction& function, const std::vector<Tensor>& inputs);
// The same on the chain (context.hpp): `function` of the chain's last output.
Matrix checkpoint(Context& context, CheckpointMode mode, const CheckpointFunction& function, const Matrix& input);

}  // namespace fp8sm::runtime
