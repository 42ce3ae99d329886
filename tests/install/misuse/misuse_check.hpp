// What every program of this folder checks, on the installed runtime as a user's program
// would: that a misuse of the API throws the documented type with a message naming the misuse,
// and that the context is still usable afterwards (a whole training step runs, with one forward
// and one backward update, and leaves no scope open). Each program prints one line per check and
// exits 0 only if all hold.
#pragma once

#include <fmt/core.h>

#include <exception>
#include <string>
#include <typeinfo>
#include <vector>

#include "runtime/fp8sm_runtime.hpp"

namespace misuse {

namespace rt = fp8sm::runtime;

inline int& failures() {
  static int count = 0;
  return count;
}

inline void fail(const std::string& what) {
  fmt::print("FAIL: {}\n", what);
  ++failures();
}

// `call` must throw an `Expected` whose message contains every one of `words`.
template <class Expected, class Call>
void expect_throw(const std::string& what, Call&& call, const std::vector<std::string>& words) {
  try {
    call();
  } catch (const Expected& e) {
    const std::string message = e.what();
    for (const std::string& word : words) {
      if (message.find(word) == std::string::npos) {
        fail(fmt::format("{}: the message does not say '{}': {}", what, word, message));
        return;
      }
    }
    fmt::print("ok: {}: {}\n", what, message);
    return;
  } catch (const std::exception& e) {
    fail(fmt::format("{}: threw {} ({}), not the documented type", what, typeid(e).name(), e.what()));
    return;
  }
  fail(what + ": did not throw");
}

// The context is usable: the step the misuse happened in ends, and the next step of a two-layer
// network trains in FP8 with 1/1 updates and leaves nothing open.
inline void expect_usable(rt::Context& context, rt::Linear& first, rt::Linear& second, const std::string& what) {
  try {
    context.end_step();
    rt::Tensor x = context.input(rt::Matrix(2, first.weight().cols, 0.5f));
    rt::Tensor y;
    {
      rt::Autocast fp8(context);
      y = second.forward(rt::relu(context, first.forward(x)));
    }
    context.backward(y, rt::Matrix(y.value.rows, y.value.cols, 1.0f));
    const rt::StepCounts counts = context.end_step();
    if (counts.forward_updates != 1 || counts.backward_updates != 1 || context.autocast_depth() != 0 ||
        !context.grad_enabled()) {
      fail(fmt::format("{}: the next step made {} forward and {} backward updates", what, counts.forward_updates,
                       counts.backward_updates));
      return;
    }
    fmt::print("ok: {}: the context trains a step after it (1/1 updates)\n", what);
  } catch (const std::exception& e) {
    fail(fmt::format("{}: the context is not usable after it: {}", what, e.what()));
  }
}

inline int verdict() { return failures() == 0 ? 0 : 1; }

}  // namespace misuse
