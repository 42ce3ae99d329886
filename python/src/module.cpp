// fp8sm._core: the transition table and the explorer, for Python (docs/python.md). The
// package fp8sm re-exports it; nothing of the semantics is written in Python.
#include <nanobind/nanobind.h>

#include <string>

#include "python/src/bindings.hpp"

namespace nb = nanobind;

namespace fp8sm::python {

spec::Semantics parse_semantics_or_throw(const std::string& text) {
  if (auto s = spec::parse_semantics(text)) return *s;
  throw nb::value_error(("unknown semantics '" + text + "' (expected fp8sm, upstream or pr3213)").c_str());
}

}  // namespace fp8sm::python

NB_MODULE(_core, m) {
  m.doc() = "The fp8sm transition table and explorer (the compiled part of the fp8sm package).";
  m.attr("__version__") = FP8SM_VERSION;
  // A machine that a module global holds (fp8sm.te's plugin) is still alive when the interpreter
  // shuts down; nanobind would report it as a leak at every exit.
  nb::set_leak_warnings(false);
  fp8sm::python::bind_machine(m);
  fp8sm::python::bind_explorer(m);
}
