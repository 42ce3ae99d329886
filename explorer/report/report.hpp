// How `explorer run` reports a ScenarioReport: text for people, one JSON document
// ("fp8sm-run/1", docs/json.md) for tools.
#pragma once

#include <string>

#include "explorer/model/scenario_run.hpp"
#include "explorer/report/json_document.hpp"
#include "spec/scenario.hpp"

namespace fp8sm::explorer {

// "TITLE under SEMANTICS", then per step its counts, escaped exceptions and violations
// (docs/scenarios.md "Results").
std::string run_text(const std::string& title, const spec::Program& program, const ScenarioReport& report);

// {"format": "fp8sm-run/1", "scenario": TITLE, "semantics": ..., "steps": [...]}.
Json run_json(const std::string& title, const spec::Program& program, const ScenarioReport& report);

// Its "steps": one object per step (also the steps of an fp8sm-program/1 document).
Json run_steps_json(const spec::Program& program, const ScenarioReport& report);

// A violation's first reason with the checker's "module #K" replaced by the program's name for
// module K.
std::string with_module_names(std::string reason, const spec::Program& program);

}  // namespace fp8sm::explorer
