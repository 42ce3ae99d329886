// The parts of the module fp8sm._core (python/src/module.cpp), each in its own file.
#pragma once

#include <nanobind/nanobind.h>

#include <string>

#include "spec/semantics.hpp"

namespace fp8sm::python {

// The semantics named `text`, or a ValueError naming the three there are.
spec::Semantics parse_semantics_or_throw(const std::string& text);

void bind_machine(nanobind::module_& m);   // machine_bindings.cpp: fp8sm.Machine
void bind_explorer(nanobind::module_& m);  // explorer_bindings.cpp: run, explore, catalogue, invariants

}  // namespace fp8sm::python
