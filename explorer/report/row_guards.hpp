// A row's guard as a boolean formula over the table's named guards (statemachine/guards.hpp),
// as the row catalogue describes it (RowDescription::guard_tree, built from the row's types).
//
// The table has one set of rows for every semantics: a row belongs to a semantics through
// the semantics guards in its guard (those that read nothing but the semantics: Upstream,
// Pr3213, Fp8sm, Pr3213OrFp8sm, whose value under each semantics the catalogue carries). Under
// one semantics those are constants, so a row whose guard is false for every value of its other
// guards can never fire there; the pictures of the table leave it out and write the guard of
// the others as it reads under that semantics ("FifoEmpty" for upstream's
// "And_<Upstream, FifoEmpty>").
#pragma once

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "spec/semantics.hpp"
#include "statemachine/row_catalogue.hpp"

namespace fp8sm::explorer {

class GuardExpression {
 public:
  // `tree` as a formula; none (no guard) is true.
  explicit GuardExpression(const statemachine::GuardTree& tree);

  // The semantics guards replaced by their value under `semantics`, and the constants folded
  // away (And_ drops true operands, Or_ false ones).
  GuardExpression under(spec::Semantics semantics) const;

  bool is_true() const { return kind_ == Kind::True; }
  bool is_false() const { return kind_ == Kind::False; }
  // Some values of its guards make it true (they are treated as independent of each other).
  bool satisfiable() const;

  // Infix, with the usual precedence (! over && over ||): "GradIsOn && !(A || B)"; the
  // constants as "true" and "false".
  std::string to_string() const;

 private:
  enum class Kind { True, False, Guard, Not, And, Or };
  Kind kind_ = Kind::True;
  std::string name_;  // a Guard's
  // A semantics guard's value under each semantics (GuardTree::holds_under); none for the others.
  std::optional<std::array<bool, spec::kAllSemantics.size()>> holds_under_;
  std::vector<GuardExpression> operands_;

  GuardExpression() = default;
  bool evaluate(const std::vector<std::string>& names, unsigned long long values) const;
  void collect_names(std::vector<std::string>& names) const;
  std::string operand_text(const GuardExpression& operand) const;
};

// Whether `row` can ever fire under `semantics`: its guard under it is satisfiable.
bool can_fire_under(const statemachine::RowDescription& row, spec::Semantics semantics);

}  // namespace fp8sm::explorer
