// fp8sm.run, fp8sm.explore, fp8sm.catalogue, fp8sm.invariants: the explorer's commands as
// functions returning its JSON documents (docs/json.md), the same bytes `explorer ... --json`
// prints, read by Python's json module. The options are checked as the command line checks
// them, with ValueError instead of exit status 2.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "explorer/model/scenario_run.hpp"
#include "explorer/report/catalogue_report.hpp"
#include "explorer/report/json_document.hpp"
#include "explorer/report/report.hpp"
#include "explorer/report/search_report.hpp"
#include "explorer/search/search.hpp"
#include "python/src/bindings.hpp"
#include "spec/invariants.hpp"
#include "spec/scenario_parser.hpp"

namespace nb = nanobind;

namespace fp8sm::python {
namespace {

// A document as a Python dict: through json.loads, so that the dict holds exactly what the
// command line prints.
nb::object to_python(const explorer::Json& document) {
  const std::string text = explorer::json_line(document);
  return nb::module_::import_("json").attr("loads")(nb::str(text.data(), text.size()));
}

void check_range(const char* name, long long value, long long low, long long high) {
  if (value < low || value > high) {
    throw nb::value_error((std::string(name) + " must be " + std::to_string(low) + " to " + std::to_string(high) +
                           ", not " + std::to_string(value))
                              .c_str());
  }
}

nb::object run(const std::string& text, const std::string& semantics, const std::string& title) {
  const spec::Semantics s = parse_semantics_or_throw(semantics);
  spec::Program program;
  try {
    program = spec::parse_scenario(text, title);
  } catch (const spec::ParseError& e) {
    throw nb::value_error(e.what());
  }
  explorer::ScenarioReport report;
  {
    nb::gil_scoped_release unlocked;
    report = explorer::run_scenario(program, s);
  }
  return to_python(explorer::run_json(title, program, report));
}

nb::object explore(int depth, const std::string& semantics, int modules, const std::optional<std::vector<std::string>>& checks,
                   int threads, bool data_inputs, bool symmetry, bool canonical_ids, std::uint64_t max_states,
                   std::uint64_t max_memory, bool coverage) {
  explorer::SearchOptions options;
  check_range("depth", depth, 0, explorer::kMaxSearchDepth);
  check_range("modules", modules, 1, explorer::kMaxSearchModules);
  check_range("threads", threads, 1, explorer::kMaxSearchThreads);
  options.depth = depth;
  options.semantics = parse_semantics_or_throw(semantics);
  options.alphabet.modules = modules;
  options.alphabet.data = data_inputs;
  options.alphabet.symmetry = symmetry;
  options.canonical_ids = canonical_ids;
  options.threads = threads;
  options.max_states = max_states;
  options.max_memory = max_memory;
  options.coverage = coverage;
  if (checks) {
    for (const std::string& item : *checks) {
      const auto invariant = spec::parse_invariant(item);
      if (!invariant) throw nb::value_error(("unknown invariant '" + item + "' (expected I1 .. I9)").c_str());
      options.checks.add(*invariant);
    }
  }
  explorer::SearchResult result;
  {
    nb::gil_scoped_release unlocked;  // a search takes seconds to hours: other threads go on
    result = explorer::search(options);
  }
  return to_python(explorer::search_json(options, result));
}

nb::object catalogue(const std::optional<std::string>& semantics) {
  std::vector<spec::Semantics> chosen(spec::kAllSemantics.begin(), spec::kAllSemantics.end());
  if (semantics) chosen = {parse_semantics_or_throw(*semantics)};
  return to_python(explorer::run_catalogue(chosen).json);
}

nb::dict invariants() {
  nb::dict all;
  for (spec::Invariant i : spec::kAllInvariants) {
    const std::string_view id = spec::id(i), summary = spec::summary(i);
    all[nb::str(id.data(), id.size())] = nb::str(summary.data(), summary.size());
  }
  return all;
}

}  // namespace

void bind_explorer(nb::module_& m) {
  m.def("run", &run, nb::arg("scenario"), nb::arg("semantics") = "fp8sm", nb::arg("title") = "<input>",
        "Runs a scenario (the text of docs/scenarios.md) under a semantics and judges each step: the "
        "'fp8sm-run/1' document of `explorer run --json`, as a dict. A malformed scenario raises "
        "ValueError with the parser's message (title:line:column).");
  m.def("explore", &explore, nb::arg("depth"), nb::arg("semantics") = "fp8sm", nb::arg("modules") = 2,
        nb::arg("checks") = nb::none(), nb::arg("threads") = 1, nb::arg("data_inputs") = false,
        nb::arg("symmetry") = true, nb::arg("canonical_ids") = true, nb::arg("max_states") = 0,
        nb::arg("max_memory") = 0, nb::arg("coverage") = false,
        "Every program of up to `depth` statements, checked against the invariants (`checks`, e.g. "
        "['I1', 'I4']; None: all): the 'fp8sm-search/1' document of `explorer --depth N --json`, as a "
        "dict; the same for any thread count. max_states and max_memory (bytes) stop it early (0: no "
        "limit); the document then says it is incomplete. The GIL is released while it searches.");
  m.def("catalogue", &catalogue, nb::arg("semantics") = nb::none(),
        "Every built-in scenario under each semantics (or one): the 'fp8sm-catalogue/1' document.");
  m.def("invariants", &invariants, "The invariants of spec §5: {'I1': summary, ...}.");
}

}  // namespace fp8sm::python
