#include "explorer/report/table_dot.hpp"

#include <fmt/format.h>

#include <iterator>
#include <stdexcept>

#include "explorer/report/dot_text.hpp"
#include "explorer/report/row_guards.hpp"
#include "statemachine/machine.hpp"

namespace fp8sm::explorer {

const std::vector<TableRegion>& table_regions() {
  // The order of transition_table.hpp's regions, which is the order it processes them in and
  // their number (states.hpp's Region).
  static const std::vector<TableRegion> regions = {
      {"ownership", "region 0: ownership (F, TE's is_first_fp8_module)",
       {"OwnershipAvailable", "OwnershipConsumed"}, "OwnershipConsumed"},
      {"checkpoint", "region 1: checkpoint (region, phase)",
       {"OutsideCheckpoint", "InOriginalForward", "InRecompute"}, "OutsideCheckpoint"},
      {"autocast", "region 2: autocast (depth 0, fp8_enabled)", {"NoAutocast", "Fp8Autocast", "NonFp8Autocast"},
       "NoAutocast"},
      {"grad", "region 3: torch grad mode", {"GradEnabled", "GradDisabled"}, "GradEnabled"},
  };
  return regions;
}

const TableRegion* region_of_state(const std::string& state) {
  for (const TableRegion& region : table_regions()) {
    for (const std::string& s : region.states) {
      if (s == state) return &region;
    }
  }
  return nullptr;
}

namespace {

// "Seq<A, B>" (component_name's action sequence) as "A, B".
std::string action_text(const std::string& action) {
  const std::string sequence = "Seq<";
  if (action.compare(0, sequence.size(), sequence) == 0 && action.back() == '>') {
    return action.substr(sequence.size(), action.size() - sequence.size() - 1);
  }
  return action;
}

bool stays(const statemachine::RowDescription& row) { return row.target == "none"; }

}  // namespace

std::string table_edge_label(const statemachine::RowDescription& row, std::optional<spec::Semantics> semantics) {
  GuardExpression guard(row.guard_tree);
  if (semantics) guard = guard.under(*semantics);
  std::string label = row.event;
  if (!guard.is_true()) label += fmt::format(" [{}]", guard.to_string());
  if (row.action != "none") label += fmt::format(" / {}", action_text(row.action));
  return label;
}

std::vector<int> table_rows_drawn(std::optional<spec::Semantics> semantics) {
  std::vector<int> drawn;
  const auto& rows = statemachine::Machine::rows().rows();
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (!semantics || can_fire_under(rows[i], *semantics)) drawn.push_back(static_cast<int>(i));
  }
  return drawn;
}

std::string table_dot(std::optional<spec::Semantics> semantics) {
  const auto& rows = statemachine::Machine::rows().rows();
  const std::vector<int> drawn = table_rows_drawn(semantics);
  const std::string scope =
      semantics ? fmt::format("under {}: the {} of its {} rows that can fire there", spec::name(*semantics),
                              drawn.size(), rows.size())
                : fmt::format("all {} rows, every semantics", rows.size());

  std::string out;
  auto to = std::back_inserter(out);
  fmt::format_to(to, "// fp8sm's transition table (statemachine/transition_table.hpp), {}.\n", scope);
  fmt::format_to(to, "// An edge per row, id \"rowN\": N is the row's number in `explorer table`.\n");
  fmt::format_to(to, "digraph transition_table {{\n");
  fmt::format_to(to, "  graph [label={}, labelloc=t, fontname=Helvetica, fontsize=14, rankdir=LR, nodesep=0.25];\n",
                 dot_quoted(fmt::format("fp8sm transition table, {}", scope)));
  fmt::format_to(to, "  node [shape=box, style=rounded, fontname=Helvetica, fontsize=12];\n");
  fmt::format_to(to, "  edge [fontname=Helvetica, fontsize=9];\n");
  const std::vector<TableRegion>& regions = table_regions();
  for (std::size_t r = 0; r < regions.size(); ++r) {
    const TableRegion& region = regions[r];
    fmt::format_to(to, "  subgraph cluster_{} {{\n", region.id);
    fmt::format_to(to, "    label={};\n", dot_quoted(region.title));
    for (const std::string& state : region.states) {
      fmt::format_to(to, "    {}{};\n", state, state == region.initial ? " [peripheries=2]" : "");
    }
    for (int index : drawn) {
      const statemachine::RowDescription& row = rows[static_cast<std::size_t>(index)];
      if (row.region != static_cast<int>(r)) continue;
      if (region_of_state(row.source) != &region) {
        throw std::logic_error(fmt::format("table_dot: row {}'s source {} is not a state of its region {}", index,
                                           row.source, region.id));
      }
      const std::string target = stays(row) ? row.source : row.target;
      if (region_of_state(target) != &region) {
        throw std::logic_error(fmt::format("table_dot: row {} leaves its region for {}", index, target));
      }
      fmt::format_to(to, "    {} -> {} [id=\"row{}\", label={}{}];\n", row.source, target, index,
                     dot_quoted(table_edge_label(row, semantics)), stays(row) ? ", style=dashed" : "");
    }
    fmt::format_to(to, "  }}\n");
  }
  fmt::format_to(to, "}}\n");
  return out;
}

}  // namespace fp8sm::explorer
