// `explorer run X --mermaid` and `explorer --depth N --mermaid`: runs as Mermaid sequence
// diagrams (https://mermaid.js.org/syntax/sequenceDiagram.html), in the style of the diagram
// TE's reviewers drew for PR #3213.
//
// One run's diagram (docs/pictures.md shows one):
//
//   %% reentrant-single-3-layers (row 5: ...) under upstream
//   sequenceDiagram
//       participant P as program
//       participant AC as autocast            (then CK checkpoint, OW ownership (F),
//       ...                                     GR grad mode, M modules, UR update registry)
//       rect rgb(232, 240, 255)
//       Note over P,UR: step 1
//       Note over P: autocast on {
//       P->>AC: AutocastEnter enabled · rows 0, 94
//       ...
//       Note over UR: forward update: reduce_and_update_fp8_tensors(forward=True)
//       Note over P,UR: step 1 ends: 2 forward, 3 backward updates
//       Note over P,UR: I1 violated: ...
//       end
//
// Each step is a `rect` block that opens with a "step k" note and closes with the step's
// counts and its violations; a message is an event fired into the table, with the rows it
// took (run_sequence.hpp says what each note is). Text is made valid UTF-8 without control
// characters as the JSON documents make it (picture_text.hpp: a newline as \n), then escaped as
// Mermaid asks: `#`, `;`, `<` and `>` as entity codes (#35; #59; #lt; #gt;).
//
// A search's picture: first, when the search found no counterexample or stopped early, a
// comment line saying so (search_report.hpp's search_picture_note), then for each
// counterexample, in the report's order, a comment line "%% I1: <reason>", the
// counterexample's diagram, and a blank line between two.
#pragma once

#include <string>
#include <vector>

#include "explorer/report/run_sequence.hpp"
#include "explorer/search/search.hpp"

namespace fp8sm::explorer {

// `text` as Mermaid message or note text: picture_text, then entity codes for what would end
// or break it.
std::string mermaid_text(const std::string& text);

// The diagram of one run, ending in a newline.
std::string run_mermaid(const RunSequence& run);

// The search's picture, as above: every counterexample's diagram, run under the search's
// semantics.
std::string search_mermaid(const SearchOptions& options, const SearchResult& result);

}  // namespace fp8sm::explorer
