// `explorer table --dot [--semantics S]`: the transition table as a Graphviz drawing.
//
// One cluster per orthogonal region (ownership, checkpoint, autocast, grad), its states as
// nodes (the initial state with a double border), and one edge per row, from its source
// state to its target, labelled "Event [guard] / action": no brackets for a row without a
// guard, the guard written infix (row_guards.hpp), an action sequence as its actions joined by
// commas. A row with no target (Boost.MSM's `none`: the state stays, no exit or entry) is a
// dashed loop on its source. Each edge's id is "row<N>", N its index in `explorer table`
// (Machine::rows()), which the SVG dot makes keeps as the id of the edge's group.
//
// Without a semantics every row is drawn with its guard as written. With one, the rows that can
// never fire under it are left out and the others' guards read as under it: the semantics
// guards decided and folded away (so "[Upstream]" disappears under upstream).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "spec/semantics.hpp"
#include "statemachine/row_catalogue.hpp"

namespace fp8sm::explorer {

// A region of the table and its states, as statemachine/states.hpp and the table's
// initial_state declare them.
struct TableRegion {
  std::string id;     // "ownership": the cluster is cluster_ownership
  std::string title;  // what the cluster's label says
  std::vector<std::string> states;
  std::string initial;
};
// Indexed by the region's number (states.hpp's Region, RowDescription::region).
const std::vector<TableRegion>& table_regions();

// The region whose states include `state`; nullptr if none does.
const TableRegion* region_of_state(const std::string& state);

// "Event [guard] / action" of `row`, its guard read under `semantics` when one is given.
std::string table_edge_label(const statemachine::RowDescription& row, std::optional<spec::Semantics> semantics);

// The rows drawn: every row without a semantics, those that can fire under it with one; each
// as its index in Machine::rows().
std::vector<int> table_rows_drawn(std::optional<spec::Semantics> semantics);

// The whole DOT document, ending in a newline.
std::string table_dot(std::optional<spec::Semantics> semantics);

}  // namespace fp8sm::explorer
