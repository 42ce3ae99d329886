#include "explorer/model/resource_bounds.hpp"

#include <algorithm>

namespace fp8sm::explorer {

namespace {

// A freed node still counts: the state keeps it (a second backward through it raises), and
// what it names (its checkpoint's record or frame) stays with it.
template <class Graph>
int live_in(const Graph& graph) {
  return static_cast<int>(graph.nodes.size());
}

}  // namespace

int live_nodes(const ModelState& state) {
  const auto& driver = state.program.model.driver;
  int live = live_in(driver.step_graph);
  for (const auto& tape : driver.tapes) live += live_in(tape);
  return live;
}

int longest_held_body(const ModelState& state) {
  const auto& m = state.program.model;
  int longest = 0;
  auto body = [&](std::size_t begin, std::size_t end) { longest = std::max(longest, static_cast<int>(end - begin)); };
  for (const auto& record : m.driver.records) body(record.body.begin, record.body.end);
  for (const auto& frame : m.driver.frames) body(frame.body.begin, frame.body.end);
  for (const auto& scope : m.scopes) {
    if (spec::is_checkpoint(scope.op)) body(scope.body_begin, m.log.size());
  }
  return longest;
}

bool within_bounds(const ModelState& state, const ResourceBounds& bounds) {
  if (bounds.open_blocks != 0 && static_cast<int>(state.facts.open.size()) > bounds.open_blocks) return false;
  return bounds.live_nodes == 0 ||
         (live_nodes(state) <= bounds.live_nodes && longest_held_body(state) <= bounds.live_nodes);
}

}  // namespace fp8sm::explorer
