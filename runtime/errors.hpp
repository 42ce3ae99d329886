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

// A non-reentrant checkpoint's recompute recorded, at a node's slot, a node of another kind
// or of another module than its forward did (the function took another path the second
// time), so the slot's saved tensors cannot be given back. TE would hand them over and fail
// later, or compute with the wrong tensors; the runtime refuses. Thrown from backward, after
// the recompute's events: the pass ends as failed.
class CheckpointError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace fp8sm::runtime
