// `explorer catalogue`: every built-in scenario (spec §7) under the semantics chosen, as one
// summary line per entry and semantics, or as one JSON document ("fp8sm-catalogue/1") holding
// each entry's run documents.
#pragma once

#include <string>
#include <vector>

#include "explorer/report/json_document.hpp"
#include "spec/semantics.hpp"

namespace fp8sm::explorer {

struct CatalogueReport {
  std::string text;  // "ROW. NAME (TITLE)", then "   SEMANTICS: F/B [violations]" per semantics
  Json json;         // {"format": "fp8sm-catalogue/1", "semantics": [...], "entries": [...]}
  bool violations = false;  // some step of some entry violates an invariant
};

CatalogueReport run_catalogue(const std::vector<spec::Semantics>& semantics);

}  // namespace fp8sm::explorer
