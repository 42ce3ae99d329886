// What one step of a scenario reports (docs/scenarios.md "Results"): the stable interface of
// `explorer run`, in text and in JSON.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "spec/invariants.hpp"

namespace fp8sm::spec {

// The Python class of an exception of the modelled program. A closed set: what TE and torch
// raise at the operations the model covers, and UserError for the language's `raise`. Code
// that acts on a kind (the invariant checker) compares these, never names.
enum class ExceptionKind : std::uint8_t { UserError, KeyError, IndexError, RuntimeError, AttributeError, TypeError };

// Its Python name, as reports print it and TE's tracebacks name it.
const char* name(ExceptionKind kind);

// An exception of the modelled program: its kind and message, as TE / torch would raise it.
// Every exception the model knows has a fixed text, so the message views a string literal:
// raising copies no string (the explorer raises in a good part of the successors it tries).
struct RaisedException {
  ExceptionKind kind = ExceptionKind::UserError;
  std::string_view message;
  bool operator==(const RaisedException& o) const { return kind == o.kind && message == o.message; }
};

struct StepResult {
  int forward_updates = 0;   // calls of reduce_and_update_fp8_tensors(forward=True)
  int backward_updates = 0;  // calls of reduce_and_update_fp8_tensors(forward=False)
  std::vector<RaisedException> raised;  // exceptions that escaped the step
  InvariantSet violations;
};

}  // namespace fp8sm::spec
