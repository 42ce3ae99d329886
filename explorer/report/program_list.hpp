// `explorer --depth N --programs`: the program of every distinct top-level state a search
// reaches, one a line (docs/explorer.md, "Programs"): the program on one line as the printer
// writes it, or, with --json, an fp8sm-program/1 document (docs/json.md) that adds the steps
// `explorer run --json` reports for it.
#pragma once

#include <cstdint>
#include <string>

#include "explorer/model/alphabet.hpp"
#include "explorer/search/search_path.hpp"
#include "spec/scenario.hpp"
#include "spec/semantics.hpp"

namespace fp8sm::explorer {

// The program a top-level state's path spells (closing braces included), its modules and tapes
// named as the search's alphabet names them (L0, L1, ..., A).
spec::Program path_program(const SearchPath& path, const AlphabetOptions& alphabet);

// Statements in `program`, closing braces not counted.
int program_depth(const spec::Program& program);

// `--programs-beyond N`: whether the list keeps `program`. One of up to N statements always;
// a deeper one only if it runs a backward and holds a Linear inside a checkpoint block for each
// statement past N: where the state code that runs at recompute time (claims and their
// re-arms, stash pops and installs) meets one more module forward per level. The deeper
// programs TE's exhaustive check adds to the whole of depth N (docs/conformance.md).
bool listed_beyond(const spec::Program& program, int beyond);

// One line of the list, with its newline: the program on one line (print_scenario_one_line);
// with `json`, {"format": "fp8sm-program/1", "index": INDEX, "depth": ..., "program": ...,
// "semantics": ..., "steps": [...]}, the steps those of run_json for the program under
// `semantics`.
std::string program_line(const spec::Program& program, std::uint64_t index, spec::Semantics semantics, bool json);

}  // namespace fp8sm::explorer
