#include "explorer/report/report.hpp"

#include <fmt/format.h>

#include <cctype>
#include <iterator>

#include "spec/invariants.hpp"

namespace fp8sm::explorer {

std::string with_module_names(std::string reason, const spec::Program& program) {
  // Highest index first, so that "module #1" does not rewrite the start of "module #12".
  for (std::size_t m = program.module_names.size(); m-- > 0;) {
    const std::string index = fmt::format("module #{}", m);
    for (std::size_t at = reason.find(index); at != std::string::npos; at = reason.find(index, at)) {
      const std::size_t end = at + index.size();
      if (end < reason.size() && std::isdigit(static_cast<unsigned char>(reason[end]))) {
        at = end;
        continue;
      }
      reason.replace(at, index.size(), program.module_names[m]);
    }
  }
  return reason;
}

std::string run_text(const std::string& title, const spec::Program& program, const ScenarioReport& report) {
  std::string out;
  auto to = std::back_inserter(out);
  fmt::format_to(to, "{} under {}\n", title, spec::name(report.semantics));
  for (std::size_t s = 0; s < report.steps.size(); ++s) {
    const spec::StepResult& step = report.steps[s];
    fmt::format_to(to, "step {}: forward_updates {}, backward_updates {}", s + 1, step.forward_updates,
                   step.backward_updates);
    if (s < report.reference.size()) {
      fmt::format_to(to, " (without checkpoints {}/{})", report.reference[s].forward_updates,
                     report.reference[s].backward_updates);
    }
    out += "\n";
    for (const spec::RaisedException& e : step.raised) fmt::format_to(to, "  raised {}: {}\n", spec::name(e.kind), e.message);
    for (spec::Invariant i : spec::kAllInvariants) {
      if (!step.violations.contains(i)) continue;
      fmt::format_to(to, "  violates {}: {}\n", spec::id(i),
                     with_module_names(report.verdicts[s].first_reason.at(i), program));
    }
    if (step.violations.empty()) out += "  no invariant violated\n";
  }
  if (report.steps.empty()) out += "(no steps)\n";
  return out;
}

Json run_json(const std::string& title, const spec::Program& program, const ScenarioReport& report) {
  Json document = json_document(kRunFormat);
  document["scenario"] = title;
  document["semantics"] = std::string(spec::name(report.semantics));
  document["steps"] = run_steps_json(program, report);
  return document;
}

Json run_steps_json(const spec::Program& program, const ScenarioReport& report) {
  Json steps = Json::array();
  for (std::size_t s = 0; s < report.steps.size(); ++s) {
    const spec::StepResult& step = report.steps[s];
    Json entry;
    entry["step"] = s + 1;
    entry["forward_updates"] = step.forward_updates;
    entry["backward_updates"] = step.backward_updates;
    if (s < report.reference.size()) {
      entry["reference"] = {{"forward_updates", report.reference[s].forward_updates},
                            {"backward_updates", report.reference[s].backward_updates}};
    } else {
      entry["reference"] = nullptr;
    }
    Json raised = Json::array();
    for (const spec::RaisedException& e : step.raised) {
      raised.push_back({{"kind", spec::name(e.kind)}, {"message", std::string(e.message)}});
    }
    entry["raised"] = std::move(raised);
    Json violations = Json::array();
    Json reasons = Json::object();
    for (spec::Invariant i : spec::kAllInvariants) {
      if (!step.violations.contains(i)) continue;
      const std::string id(spec::id(i));
      violations.push_back(id);
      reasons[id] = with_module_names(report.verdicts[s].first_reason.at(i), program);
    }
    entry["violations"] = std::move(violations);
    entry["reasons"] = std::move(reasons);
    steps.push_back(std::move(entry));
  }
  return steps;
}

}  // namespace fp8sm::explorer
