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
// The counterexamples of a search: one digraph each, after a comment line "// I1: <reason>";
// nothing when the search found none. `dot -Tsvg` draws the first graph of its input only
// into one SVG document, so a picture of one counterexample selects it with --check.
#pragma once

#include <string>
#include <vector>

#include "explorer/run_sequence.hpp"
#include "explorer/search.hpp"

namespace fp8sm::explorer {

std::string run_sequence_dot(const RunSequence& run);

std::string counterexamples_dot(const std::vector<Counterexample>& counterexamples, spec::Semantics semantics);

}  // namespace fp8sm::explorer
