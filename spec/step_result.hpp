// What one step of a scenario reports (docs/scenarios.md "Results"): the stable interface of
// `explorer run`, in text and in JSON.
#pragma once

#include <string>
#include <vector>

#include "spec/invariants.hpp"

namespace fp8sm::spec {

// An exception of the modelled program: its Python kind (UserError for `raise`, KeyError,
// IndexError, RuntimeError) and message, as TE / torch would raise it.
struct RaisedException {
  std::string kind;
  std::string message;
  bool operator==(const RaisedException& o) const { return kind == o.kind && message == o.message; }
};

struct StepResult {
  int forward_updates = 0;   // calls of reduce_and_update_fp8_tensors(forward=True)
  int backward_updates = 0;  // calls of reduce_and_update_fp8_tensors(forward=False)
  std::vector<RaisedException> raised;  // exceptions that escaped the step
  InvariantSet violations;
};

}  // namespace fp8sm::spec
