#include "explorer/report.hpp"

#include <cstdio>
#include <cctype>

#include "spec/invariants.hpp"

namespace fp8sm::explorer {

std::string json_string(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buffer[8];
          std::snprintf(buffer, sizeof buffer, "\\u%04x", static_cast<unsigned>(c));
          out += buffer;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

namespace {

// The checker names modules by index; people read names.
std::string with_module_names(std::string reason, const spec::Program& program) {
  for (std::size_t m = program.module_names.size(); m-- > 0;) {
    const std::string index = "module #" + std::to_string(m);
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

}  // namespace

void print_text(std::ostream& out, const std::string& title, const spec::Program& program,
                const ScenarioReport& report) {
  out << title << " under " << spec::name(report.semantics) << "\n";
  for (std::size_t s = 0; s < report.steps.size(); ++s) {
    const spec::StepResult& step = report.steps[s];
    out << "step " << s + 1 << ": forward_updates " << step.forward_updates << ", backward_updates "
        << step.backward_updates;
    if (s < report.reference.size()) {
      out << " (without checkpoints " << report.reference[s].forward_updates << "/"
          << report.reference[s].backward_updates << ")";
    }
    out << "\n";
    for (const spec::RaisedException& e : step.raised) out << "  raised " << spec::name(e.kind) << ": " << e.message << "\n";
    for (spec::Invariant i : spec::kAllInvariants) {
      if (!step.violations.contains(i)) continue;
      out << "  violates " << spec::id(i) << ": "
          << with_module_names(report.verdicts[s].first_reason.at(i), program) << "\n";
    }
    if (step.violations.empty()) out << "  no invariant violated\n";
  }
  if (report.steps.empty()) out << "(no steps)\n";
}

void print_json(std::ostream& out, const ScenarioReport& report) {
  out << "{\"semantics\": " << json_string(std::string(spec::name(report.semantics))) << ", \"steps\": [";
  for (std::size_t s = 0; s < report.steps.size(); ++s) {
    const spec::StepResult& step = report.steps[s];
    if (s > 0) out << ", ";
    out << "{\"forward_updates\": " << step.forward_updates << ", \"backward_updates\": " << step.backward_updates
        << ", \"raised\": [";
    for (std::size_t e = 0; e < step.raised.size(); ++e) {
      if (e > 0) out << ", ";
      out << "{\"kind\": " << json_string(spec::name(step.raised[e].kind))
          << ", \"message\": " << json_string(std::string(step.raised[e].message)) << "}";
    }
    out << "], \"violations\": [";
    bool first = true;
    for (spec::Invariant i : spec::kAllInvariants) {
      if (!step.violations.contains(i)) continue;
      if (!first) out << ", ";
      first = false;
      out << "\"" << spec::id(i) << "\"";
    }
    out << "]}";
  }
  out << "]}\n";
}

}  // namespace fp8sm::explorer
