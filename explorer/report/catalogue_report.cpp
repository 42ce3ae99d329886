#include "explorer/report/catalogue_report.hpp"

#include <fmt/format.h>

#include <iterator>

#include "explorer/model/scenario_run.hpp"
#include "explorer/report/report.hpp"
#include "spec/catalogue.hpp"
#include "spec/scenario_parser.hpp"

namespace fp8sm::explorer {

CatalogueReport run_catalogue(const std::vector<spec::Semantics>& semantics) {
  CatalogueReport report;
  auto to = std::back_inserter(report.text);
  report.json = json_document(kCatalogueFormat);
  Json names = Json::array();
  for (spec::Semantics s : semantics) names.push_back(std::string(spec::name(s)));
  report.json["semantics"] = std::move(names);
  Json entries = Json::array();
  for (const spec::CatalogueEntry& entry : spec::catalogue()) {
    const spec::Program program = spec::parse_scenario(entry.text, "catalogue:" + entry.name);
    fmt::format_to(to, "{}. {} ({})\n", entry.row, entry.name, entry.title);
    Json runs = Json::array();
    for (spec::Semantics s : semantics) {
      const ScenarioReport run = run_scenario(program, s);
      fmt::format_to(to, "   {}:", spec::name(s));
      for (const spec::StepResult& step : run.steps) {
        report.violations = report.violations || !step.violations.empty();
        fmt::format_to(to, " {}/{}", step.forward_updates, step.backward_updates);
        if (!step.raised.empty()) fmt::format_to(to, " (raised {})", spec::name(step.raised.front().kind));
        fmt::format_to(to, " [{}]", step.violations.to_string());
      }
      report.text += "\n";
      runs.push_back(run_json("catalogue:" + entry.name, program, run));
    }
    entries.push_back({{"row", entry.row},
                       {"name", entry.name},
                       {"title", entry.title},
                       {"scenario", entry.text},
                       {"runs", std::move(runs)}});
  }
  report.json["entries"] = std::move(entries);
  return report;
}

}  // namespace fp8sm::explorer
