// How `explorer --depth N` reports a SearchResult: text for people, one JSON document
// ("fp8sm-search/1", docs/json.md) for tools, each counterexample in it a document of its own
// ("fp8sm-counterexample/1") that a tool may keep apart from the search.
#pragma once

#include <functional>
#include <string>

#include "explorer/report/json_document.hpp"
#include "explorer/report/run_sequence.hpp"
#include "explorer/search/search.hpp"

namespace fp8sm::explorer {

std::string search_text(const SearchOptions& options, const SearchResult& result);
Json search_json(const SearchOptions& options, const SearchResult& result);

// A search's picture (--mermaid, --dot) in a format that `comment` writes a comment line of and
// `draw` draws a run in: each shortest counterexample drawn after a comment naming it. A comment
// line before them keeps the picture from being empty or silent about what the report would
// say: that there is no counterexample (and which invariants hold, to what depth), or that the
// search stopped early, why and where, and so the counterexamples are those of what was
// explored. A complete search with counterexamples has none: its diagrams say it.
std::string search_picture(const SearchOptions& options, const SearchResult& result,
                           const std::function<std::string(const std::string&)>& comment,
                           const std::function<std::string(const RunSequence&)>& draw);

// One shortest counterexample: the semantics, the invariant, the reason and the program, as
// scenario text that `explorer run` replays.
Json counterexample_json(spec::Semantics semantics, const Counterexample& counterexample,
                         std::uint64_t violating_states);

}  // namespace fp8sm::explorer
