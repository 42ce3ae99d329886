// Every row of the transition table, listed and numbered, so that tests can tell which rows a
// set of scenarios takes (table coverage) and docs can print the table.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <typeindex>
#include <vector>

#include "spec/semantics.hpp"

namespace fp8sm::statemachine {

// Identifies a row by its five components; one distinct type per row.
template <class Source, class Event, class Target, class Action, class Guard>
struct RowKey {};

// A row's guard as the table composes it, built from the guard's type (machine.cpp): Boost.MSM's
// none (no guard), And_, Or_ and Not_ over the named guards of guards.hpp.
struct GuardTree {
  enum class Kind : std::uint8_t { None, Guard, Not, And, Or };
  Kind kind = Kind::None;
  std::string name;  // a Guard's, as component_name() writes it
  // A guard that reads the semantics and nothing else (FP8SM_SEMANTICS_GUARD), and its value
  // under each semantics (index: the Semantics' value).
  bool reads_only_semantics = false;
  std::array<bool, spec::kAllSemantics.size()> holds_under{};
  std::vector<GuardTree> operands;  // Not_'s one, And_'s and Or_'s two
};

struct RowDescription {
  std::string source, event, target, action, guard;  // component_name() of each
  GuardTree guard_tree;  // `guard`, as a formula
  int region = 0;        // its source state's region (states.hpp: Region), where it runs
  std::string to_string() const;  // "Source + Event [Guard] -> Target / Action"
};

// Filled once from the table type (see transition_table.hpp); index = position in the table.
class RowCatalogue {
 public:
  void add(std::type_index key, RowDescription description);
  int index_of(std::type_index key) const;  // -1 if unknown
  const std::vector<RowDescription>& rows() const { return rows_; }

 private:
  std::vector<std::type_index> keys_;
  std::vector<RowDescription> rows_;
};

// Readable name of a table component: namespaces of this project and of Boost.MSM removed.
std::string component_name(const std::type_info& type);

}  // namespace fp8sm::statemachine
