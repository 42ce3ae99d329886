// How `explorer run` prints a ScenarioReport: text for people, one JSON object for tools
// (the stable interface of docs/scenarios.md "Results").
#pragma once

#include <ostream>
#include <string>

#include "explorer/scenario_run.hpp"
#include "spec/scenario.hpp"

namespace fp8sm::explorer {

void print_text(std::ostream& out, const std::string& title, const spec::Program& program,
                const ScenarioReport& report);

// {"semantics": "upstream", "steps": [{"forward_updates": 2, "backward_updates": 3,
//  "raised": [], "violations": ["I1", "I2"]}]} on one line.
void print_json(std::ostream& out, const ScenarioReport& report);

std::string json_string(const std::string& text);  // quoted and escaped

}  // namespace fp8sm::explorer
