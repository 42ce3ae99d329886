// How `explorer --depth N` prints a SearchResult: text for people, one JSON object for tools.
#pragma once

#include <ostream>

#include "explorer/search.hpp"

namespace fp8sm::explorer {

void print_search_text(std::ostream& out, const SearchOptions& options, const SearchResult& result);
void print_search_json(std::ostream& out, const SearchOptions& options, const SearchResult& result);

}  // namespace fp8sm::explorer
