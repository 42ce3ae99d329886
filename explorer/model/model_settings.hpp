// What makes the model of a search: which semantics runs the programs, which statements they may
// use, which invariants are checked, and which states count as one (canonical ids, module-name
// symmetry). The engine never reads these (search/program_model.hpp turns them into the model it
// searches); the engine's own settings are search/search_types.hpp's EngineOptions.
#pragma once

#include "explorer/model/abstractions.hpp"
#include "explorer/model/alphabet.hpp"
#include "spec/invariants.hpp"
#include "spec/semantics.hpp"

namespace fp8sm::explorer {

struct ModelSettings {
  spec::Semantics semantics = spec::Semantics::Upstream;
  // The statements, module names and tapes, and module-name symmetry (alphabet.hpp).
  AlphabetOptions alphabet;
  spec::InvariantSet checks;  // empty: all
  // Canonical ids: states that differ only in how capture, node and graph ids were numbered
  // (and in entries of ids nothing refers to any more) are one state. Off: the raw encoding.
  bool canonical_ids = true;
  // Which other states are one: what no future statement reads (abstractions.hpp).
  Abstractions abstractions;

  // The invariants judged: `checks`, or every one when it names none.
  spec::InvariantSet checked() const {
    if (!checks.empty()) return checks;
    spec::InvariantSet all;
    for (spec::Invariant i : spec::kAllInvariants) all.add(i);
    return all;
  }
};

}  // namespace fp8sm::explorer
