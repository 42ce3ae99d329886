// Table coverage: how often each row of the transition table is taken by a set of scenarios,
// and the set the tests use, the catalogue (spec §7) and the regression corpus
// (tests/scenarios/).
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "interpreter/interpreter.hpp"
#include "spec/catalogue.hpp"
#include "spec/scenario.hpp"
#include "spec/scenario_parser.hpp"
#include "spec/semantics.hpp"

namespace fp8sm::test_support {

struct NamedScenario {
  std::string name;  // the catalogue entry's name, or the corpus file's name ("edge-....scn")
  spec::Program program;
};

// Every catalogue entry, then every .scn file of tests/scenarios/, parsed.
inline std::vector<NamedScenario> catalogue_and_corpus() {
  std::vector<NamedScenario> scenarios;
  for (const spec::CatalogueEntry& entry : spec::catalogue()) {
    scenarios.push_back({entry.name, spec::parse_scenario(entry.text, entry.name)});
  }
  for (const auto& file : std::filesystem::directory_iterator(FP8SM_SOURCE_DIR "/tests/scenarios")) {
    if (file.path().extension() != ".scn") continue;
    std::ifstream in(file.path());
    std::stringstream text;
    text << in.rdbuf();
    scenarios.push_back({file.path().filename().string(), spec::parse_scenario(text.str(), file.path().string())});
  }
  return scenarios;
}

// Adds, per row, how often `program` takes it under `semantics`.
inline void add_coverage(const spec::Program& program, spec::Semantics semantics, std::vector<std::uint64_t>& counts) {
  interpreter::Interpreter interpreter(semantics, nullptr);
  interpreter.machine().record_coverage(&counts);
  interpreter.run(program);
}

// The same under every semantics.
inline void add_coverage(const spec::Program& program, std::vector<std::uint64_t>& counts) {
  for (spec::Semantics s : spec::kAllSemantics) add_coverage(program, s, counts);
}

}  // namespace fp8sm::test_support
