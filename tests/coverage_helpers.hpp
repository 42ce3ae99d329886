// Table coverage: how often each row of the transition table is taken by a set of scenarios.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "spec/scenario.hpp"
#include "spec/semantics.hpp"
#include "interpreter/interpreter.hpp"

namespace fp8sm::test_support {

inline void add_coverage(const spec::Program& program, std::vector<std::uint64_t>& counts) {
  for (spec::Semantics s : spec::kAllSemantics) {
    interpreter::Interpreter interpreter(s, nullptr);
    interpreter.machine().record_coverage(&counts);
    interpreter.run(program);
  }
}

}  // namespace fp8sm::test_support
