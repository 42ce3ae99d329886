// `explorer run X --dot` and `explorer --depth N --dot`: the sequence of a run (run_sequence.hpp)
// as a Graphviz drawing, so that `dot -Tsvg` makes the SVG that Mermaid's own renderer would
// need a browser for.
//
// dot lays out graphs, not sequences, so the drawing is one table (an HTML-like label): a
// column per part of the model, left to right as in the Mermaid diagram, a row per message or
// note in time order. A message is an underlined cell spanning the columns from its sender to
// its receiver, ending in an arrowhead ("▶"); a note a yellow cell over its parts; each step
// starts with a row "step k" and ends with its counts and violations (red).
//
// A search's picture: first, when the search found no counterexample or stopped early, a
// comment line saying so (search_report.hpp's search_picture_note), then one digraph per
// counterexample, each after a comment line "// I1: <reason>". `dot -Tsvg` draws the first graph
// of its input only into one SVG document, so a picture of one counterexample selects it with
// --check.
#pragma once

#include <string>
#include <vector>

#include "explorer/report/run_sequence.hpp"
#include "explorer/search/search.hpp"

namespace fp8sm::explorer {

std::string run_sequence_dot(const RunSequence& run);

std::string search_dot(const SearchOptions& options, const SearchResult& result);

}  // namespace fp8sm::explorer
