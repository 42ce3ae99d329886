// How `explorer --depth N` reports a SearchResult: text for people, one JSON document
// ("fp8sm-search/1", docs/json.md) for tools, each counterexample in it a document of its own
// ("fp8sm-counterexample/1") that a tool may keep apart from the search.
#pragma once

#include <string>

#include "explorer/json_document.hpp"
#include "explorer/search.hpp"

namespace fp8sm::explorer {

std::string search_text(const SearchOptions& options, const SearchResult& result);
Json search_json(const SearchOptions& options, const SearchResult& result);

// What a search's picture (--mermaid, --dot: its counterexamples drawn) says in a comment line
// before them, so that it is never empty and never silent about what its report would say:
// that there is no counterexample (and which invariants hold, to what depth), or that the
// search stopped early, why and where, and so the counterexamples are those of what was
// explored. Empty for a complete search with counterexamples, which its diagrams say.
std::string search_picture_note(const SearchOptions& options, const SearchResult& result);

// One shortest counterexample: the semantics, the invariant, the reason and the program, as
// scenario text that `explorer run` replays.
Json counterexample_json(spec::Semantics semantics, const Counterexample& counterexample,
                         std::uint64_t violating_states);

}  // namespace fp8sm::explorer
