#include "explorer/report/coverage_report.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <iterator>

#include "explorer/report/row_guards.hpp"
#include "spec/scenario_parser.hpp"
#include "statemachine/machine.hpp"

namespace fp8sm::explorer {

namespace {

struct CoverageSummary {
  std::vector<bool> present_at;          // per row: its guard can hold under the semantics
  std::vector<std::size_t> never_fired;  // present under the semantics, taken by no transition
  std::vector<std::size_t> absent;       // cannot fire under the semantics
  std::size_t present = 0;
  std::size_t fired = 0;
};

CoverageSummary summarise(spec::Semantics semantics, const std::vector<std::uint64_t>& row_transitions) {
  CoverageSummary summary;
  const auto& rows = statemachine::Machine::rows().rows();
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const std::uint64_t taken = r < row_transitions.size() ? row_transitions[r] : 0;
    if (taken > 0) ++summary.fired;
    summary.present_at.push_back(can_fire_under(rows[r], semantics));
    if (!summary.present_at.back()) {
      summary.absent.push_back(r);
      continue;
    }
    ++summary.present;
    if (taken == 0) summary.never_fired.push_back(r);
  }
  return summary;
}

std::string row_list(const std::vector<std::size_t>& rows) {
  if (rows.empty()) return "none";
  return fmt::format("{}", fmt::join(rows, " "));
}

}  // namespace

std::string coverage_text(spec::Semantics semantics, const SearchResult& result) {
  const std::vector<std::uint64_t>& row_transitions = result.row_transitions;
  const CoverageSummary summary = summarise(semantics, row_transitions);
  const auto& rows = statemachine::Machine::rows().rows();
  std::string out;
  auto to = std::back_inserter(out);
  fmt::format_to(to, "coverage: {} of the {} rows present under {} fired ({} rows absent under it)\n", summary.fired,
                 summary.present, spec::name(semantics), summary.absent.size());
  out += "  row  transitions  shortest  row\n";
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const std::uint64_t taken = r < row_transitions.size() ? row_transitions[r] : 0;
    const std::string shortest = taken > 0 ? fmt::format("{}", result.row_witnesses[r].length) : "-";
    const char* mark = summary.present_at[r] ? "" : "  (absent)";
    fmt::format_to(to, "  {:>3}  {:>11}  {:>8}  {}{}\n", r, taken, shortest, rows[r].to_string(), mark);
  }
  fmt::format_to(to, "never fired under {}: {}\n", spec::name(semantics), row_list(summary.never_fired));
  return out;
}

Json coverage_json(spec::Semantics semantics, const SearchResult& result) {
  const std::vector<std::uint64_t>& row_transitions = result.row_transitions;
  const CoverageSummary summary = summarise(semantics, row_transitions);
  const auto& rows = statemachine::Machine::rows().rows();
  Json per_row = Json::array();
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const std::uint64_t taken = r < row_transitions.size() ? row_transitions[r] : 0;
    Json entry = {{"row", r},
                  {"description", rows[r].to_string()},
                  {"present", summary.present_at[r]},
                  {"transitions", taken}};
    entry["shortest"] = taken > 0 ? Json(spec::print_scenario_one_line(result.row_witnesses[r].program)) : Json(nullptr);
    per_row.push_back(std::move(entry));
  }
  Json coverage = Json::object();
  coverage["rows"] = std::move(per_row);
  coverage["rows_present"] = summary.present;
  coverage["rows_fired"] = summary.fired;
  coverage["never_fired"] = summary.never_fired;
  coverage["absent"] = summary.absent;
  return coverage;
}

}  // namespace fp8sm::explorer
