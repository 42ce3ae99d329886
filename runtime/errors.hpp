// What the runtime throws besides std::invalid_argument (bad tensors, bad recipes).
#pragma once

#include <fmt/core.h>

#include <stdexcept>
#include <string>

namespace fp8sm::runtime {

// The program used the API against its rules: a scope left twice or out of order, a module
// run twice in one autocast region with reduce_amax, backward with nothing recorded. The
// runtime's state is unchanged: the call did nothing.
class MisuseError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

// The state machine raised, as TE or torch would from inside the operation (`kind` is the
// Python type): KeyError, IndexError, RuntimeError of TE's FP8 state under the upstream or
// pr3213 semantics; the AttributeError of a second backward through a Linear; the IndexError
// and TypeError of a non-reentrant checkpoint's saved-tensor hook (spec §3.5). The state is
// what the semantics leaves after raising (spec §3.7).
class StateError : public std::runtime_error {
 public:
  StateError(std::string kind, const std::string& message)
      : std::runtime_error(fmt::format("{}: {}", kind, message)), kind_(std::move(kind)) {}
  const std::string& kind() const { return kind_; }

 private:
  std::string kind_;
};

// A checkpoint's function did, when it ran again at backward, what its recompute cannot give
// back: a non-reentrant recompute recorded, at a node's slot, a node of another kind, module
// or shape than its forward did (TE would hand the saved tensors over and fail later, or
// compute with the wrong tensors); a reentrant recompute returned another shape, or recorded an
// op that does not lead to its output (torch would skip its backward; the table would count
// it). Thrown from backward, after the recompute's events: the pass ends as failed, as when the
// function throws there.
class CheckpointError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace fp8sm::runtime
