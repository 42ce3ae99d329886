// What the runtime throws besides std::invalid_argument (bad tensors, bad recipes).
#pragma once

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

// The state machine raised, as TE would from inside the operation (KeyError, IndexError,
// RuntimeError under the upstream or pr3213 semantics; `kind` is the Python type). The state
// is what the semantics leaves after raising (spec §3.7).
class StateError : public std::runtime_error {
 public:
  StateError(std::string kind, const std::string& message)
      : std::runtime_error(kind + ": " + message), kind_(std::move(kind)) {}
  const std::string& kind() const { return kind_; }

 private:
  std::string kind_;
};

// A non-reentrant checkpoint's recompute recorded other nodes than its forward (the function
// took another path the second time), so the forward's saved tensors cannot be given back;
// torch raises its CheckpointError here too. Thrown from backward, after the recompute's
// events: the pass ends as failed.
class CheckpointError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace fp8sm::runtime
