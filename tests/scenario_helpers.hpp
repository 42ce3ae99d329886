// Helpers shared by the tests: run a catalogue entry or a scenario text on the model.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "explorer/scenario_run.hpp"
#include "spec/catalogue.hpp"
#include "spec/scenario_parser.hpp"

namespace fp8sm::test_support {

inline spec::Program catalogue_program(const std::string& name) {
  const spec::CatalogueEntry* entry = spec::find_catalogue_entry(name);
  if (entry == nullptr) throw std::runtime_error("no catalogue entry " + name);
  return spec::parse_scenario(entry->text, name);
}

inline explorer::ScenarioReport run_text(const std::string& text, spec::Semantics semantics) {
  return explorer::run_scenario(spec::parse_scenario(text), semantics);
}

inline spec::InvariantSet invariants(std::initializer_list<spec::Invariant> list) {
  spec::InvariantSet set;
  for (spec::Invariant i : list) set.add(i);
  return set;
}

}  // namespace fp8sm::test_support
