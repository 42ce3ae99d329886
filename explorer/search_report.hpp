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

// One shortest counterexample: the semantics, the invariant, the reason and the program, as
// scenario text that `explorer run` replays.
Json counterexample_json(spec::Semantics semantics, const Counterexample& counterexample,
                         std::uint64_t violating_states);

}  // namespace fp8sm::explorer
