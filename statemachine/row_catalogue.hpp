// Every row of the transition table, listed and numbered, so that tests can tell which rows a
// set of scenarios takes (table coverage) and docs can print the table.
#pragma once

#include <cstdint>
#include <string>
#include <typeindex>
#include <vector>

namespace fp8sm::statemachine {

// Identifies a row by its five components; one distinct type per row.
template <class Source, class Event, class Target, class Action, class Guard>
struct RowKey {};

struct RowDescription {
  std::string source, event, target, action, guard;
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
