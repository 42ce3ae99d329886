// What the search engine asks of the model it searches, and nothing more: the engine knows a
// state only by its path (the statement codes from the initial state, search_path.hpp) and its
// fingerprint; the model runs statements, judges them and lists what may come next. The engine
// stores, orders, splits among threads and ranks, budgets and snapshots; the model gives the
// states their meaning. search/program_model.hpp is the model of the scenario language's
// programs; tests/explorer/test_engine_toy_model.cpp runs a toy model through the same engine.
//
// What the engine relies on (each a property the model must have, or the search is unsound):
// - Determinism: stand_on(path) then a statement gives the same Step every time, on every
//   thread and rank; the order of next_statements is fixed.
// - Fingerprints: equal fingerprints mean equal futures (the same statements may follow, with
//   the same steps), since a state is expanded once, the first time it is seen.
// - Settling: after a statement the engine runs close_code() until the state is at top level;
//   those states are reached for free (the same layer). A model without such statements is
//   always at top level.
// - Codes: one byte per statement, never kNoStatementCode (which pads a path).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "explorer/model/fingerprint.hpp"
#include "explorer/search/search_path.hpp"
#include "spec/invariants.hpp"
#include "spec/scenario.hpp"

namespace fp8sm::explorer {

using StatementCode = std::uint8_t;

// One statement's outcome on a state.
struct ModelStep {
  spec::InvariantSet violations;      // of the statement
  Fingerprint fingerprint;            // of the state it reached
  bool top_level = false;             // that state is settled: no close needed, a program may end
  spec::InvariantSet end_violations;  // top level only: what ending there violates
  // The state is past the model's resource bounds (a fixpoint search's, alphabet.hpp): the
  // statement that started its chain is not taken, and the engine drops the chain's links.
  bool out_of_bounds = false;
};

// One thread's handle on the model: the state it stands on, and a child it extends from it. A
// cursor is used by one thread at a time; a model hands out one per thread.
class ModelCursor {
 public:
  virtual ~ModelCursor() = default;
  // The initial state (the empty path), as a step that reached it: its fingerprint and what
  // ending there violates; its own violations are empty.
  virtual ModelStep initial() = 0;
  // Stands on the state `path` reaches from the initial state (a cursor may keep what it rebuilt
  // last: siblings come one after the other) and lists, in the model's fixed order, the codes
  // of the statements that may follow it.
  virtual void stand_on(const SearchPath& path, std::vector<StatementCode>& next) = 0;
  // `code` run on a copy of the state stood on (`on_child` false: the first link of a chain) or
  // on the state the last step reached (true: the closes after it). With `rows` not null, the
  // table rows its transitions took (and, at top level, the end's) are appended to it.
  virtual ModelStep step(StatementCode code, bool on_child, std::vector<std::uint16_t>* rows) = 0;
  // Why the last statement of `path` (or, `at_end`, ending the program after it) violated
  // `invariant`, replayed from the initial state.
  virtual std::string reason(const SearchPath& path, bool at_end, spec::Invariant invariant) = 0;
};

class SearchModel {
 public:
  virtual ~SearchModel() = default;
  virtual std::unique_ptr<ModelCursor> cursor() const = 0;
  // The statement that closes the innermost open block (see "Settling" above).
  virtual StatementCode close_code() const = 0;
  // The invariants judged (never empty): a violation of another is not reported.
  virtual spec::InvariantSet checked() const = 0;
  // What a state carries for them, in words, for the report.
  virtual std::vector<std::string> carried() const = 0;
  // The number of rows of the model's table (EngineOptions::coverage counts each).
  virtual std::size_t table_rows() const = 0;
  // `path` as a program, its open blocks closed: how a counterexample is reported.
  virtual spec::Program program(const SearchPath& path) const = 0;
  // Who the model's states are, for snapshots: a hash that changes whenever its states or
  // their fingerprints mean something else, and its settings in words ("name=value ...", the
  // tokens compared one by one when a snapshot is resumed).
  virtual std::uint64_t identity() const = 0;
  virtual std::string settings() const = 0;
};

}  // namespace fp8sm::explorer
