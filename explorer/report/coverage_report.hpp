// Table coverage of a search (`explorer --depth N --coverage`): per row of the transition
// table, as `explorer table` numbers them, the transitions that took it, and the rows never
// taken. A row absent under the semantics (its guard cannot hold there, can_fire_under in
// explorer/report/row_guards.hpp) is listed apart: it is not dead code of that semantics, it is not part of it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "explorer/report/json_document.hpp"
#include "explorer/search/search.hpp"
#include "spec/semantics.hpp"

namespace fp8sm::explorer {

// From a search with SearchOptions::coverage: its row_transitions and row_witnesses. Per row
// the text gives the transitions that took it and the length of the shortest program that did.
std::string coverage_text(spec::Semantics semantics, const SearchResult& result);

// {"rows": [{"row", "description", "present", "transitions", "shortest"}...], "rows_present",
//  "rows_fired", "never_fired": [rows present but not taken], "absent": [rows absent under the
//  semantics]}; "shortest" is the first program that took the row, one line of the scenario
//  language, or null.
Json coverage_json(spec::Semantics semantics, const SearchResult& result);

}  // namespace fp8sm::explorer
