// The built-in catalogue: the configurations of spec §7 as scenario files (spec/catalogue/),
// compiled into the program so that `explorer run NAME` works anywhere.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace fp8sm::spec {

struct CatalogueEntry {
  std::string name;   // file name without the row number and extension: "reentrant-single-3-layers"
  int row = 0;        // the row of spec §7
  std::string title;  // the first comment line of the file
  std::string text;   // the scenario
};

const std::vector<CatalogueEntry>& catalogue();

// By name, or by row number ("5"); nullptr if there is none.
const CatalogueEntry* find_catalogue_entry(std::string_view name_or_row);

}  // namespace fp8sm::spec
