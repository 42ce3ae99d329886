#include "explorer/report/row_guards.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace fp8sm::explorer {

GuardExpression::GuardExpression(const statemachine::GuardTree& tree) {
  using Tree = statemachine::GuardTree;
  switch (tree.kind) {
    case Tree::Kind::None:
      kind_ = Kind::True;
      break;
    case Tree::Kind::Guard:
      kind_ = Kind::Guard;
      name_ = tree.name;
      if (tree.reads_only_semantics) holds_under_ = tree.holds_under;
      break;
    case Tree::Kind::Not:
      kind_ = Kind::Not;
      break;
    case Tree::Kind::And:
      kind_ = Kind::And;
      break;
    case Tree::Kind::Or:
      kind_ = Kind::Or;
      break;
  }
  for (const Tree& operand : tree.operands) operands_.emplace_back(operand);
}

GuardExpression GuardExpression::under(spec::Semantics semantics) const {
  GuardExpression out;
  switch (kind_) {
    case Kind::True:
    case Kind::False:
      return *this;
    case Kind::Guard:
      if (holds_under_) {
        out.kind_ = (*holds_under_)[static_cast<std::size_t>(semantics)] ? Kind::True : Kind::False;
        return out;
      }
      return *this;
    case Kind::Not: {
      GuardExpression operand = operands_.front().under(semantics);
      if (operand.is_true() || operand.is_false()) {
        out.kind_ = operand.is_true() ? Kind::False : Kind::True;
        return out;
      }
      out.kind_ = Kind::Not;
      out.operands_.push_back(std::move(operand));
      return out;
    }
    case Kind::And:
    case Kind::Or: {
      // The constant that decides the whole (false for And_) and the one that drops out.
      const Kind absorbing = kind_ == Kind::And ? Kind::False : Kind::True;
      for (const GuardExpression& operand : operands_) {
        GuardExpression o = operand.under(semantics);
        if (o.kind_ == absorbing) {
          out.kind_ = absorbing;
          out.operands_.clear();
          return out;
        }
        if (o.is_true() || o.is_false()) continue;  // the neutral constant
        out.operands_.push_back(std::move(o));
      }
      if (out.operands_.empty()) {
        out.kind_ = kind_ == Kind::And ? Kind::True : Kind::False;
      } else if (out.operands_.size() == 1) {
        GuardExpression only = std::move(out.operands_.front());
        return only;
      } else {
        out.kind_ = kind_;
      }
      return out;
    }
  }
  return *this;
}

void GuardExpression::collect_names(std::vector<std::string>& names) const {
  if (kind_ == Kind::Guard && std::find(names.begin(), names.end(), name_) == names.end()) names.push_back(name_);
  for (const GuardExpression& o : operands_) o.collect_names(names);
}

bool GuardExpression::evaluate(const std::vector<std::string>& names, unsigned long long values) const {
  switch (kind_) {
    case Kind::True:
      return true;
    case Kind::False:
      return false;
    case Kind::Guard: {
      const auto at = static_cast<unsigned>(std::find(names.begin(), names.end(), name_) - names.begin());
      return ((values >> at) & 1U) != 0;
    }
    case Kind::Not:
      return !operands_.front().evaluate(names, values);
    case Kind::And:
      return std::all_of(operands_.begin(), operands_.end(),
                         [&](const GuardExpression& o) { return o.evaluate(names, values); });
    case Kind::Or:
      return std::any_of(operands_.begin(), operands_.end(),
                         [&](const GuardExpression& o) { return o.evaluate(names, values); });
  }
  return false;
}

// Every assignment of its guards, tried: a row's guard names a handful.
bool GuardExpression::satisfiable() const {
  std::vector<std::string> names;
  collect_names(names);
  constexpr std::size_t kMaxNames = 20;
  if (names.size() > kMaxNames) {
    throw std::invalid_argument(fmt::format("guard {}: more than {} guards to try", to_string(), kMaxNames));
  }
  for (unsigned long long values = 0; values < (1ULL << names.size()); ++values) {
    if (evaluate(names, values)) return true;
  }
  return false;
}

std::string GuardExpression::operand_text(const GuardExpression& operand) const {
  // An operand binds looser than its parent only when it is an Or_ under an And_ or a Not_,
  // or an And_ under a Not_.
  const bool looser = (operand.kind_ == Kind::Or && kind_ != Kind::Or) || (operand.kind_ == Kind::And && kind_ == Kind::Not);
  return looser ? fmt::format("({})", operand.to_string()) : operand.to_string();
}

std::string GuardExpression::to_string() const {
  switch (kind_) {
    case Kind::True:
      return "true";
    case Kind::False:
      return "false";
    case Kind::Guard:
      return name_;
    case Kind::Not:
      return "!" + operand_text(operands_.front());
    case Kind::And:
    case Kind::Or: {
      std::string out;
      for (const GuardExpression& o : operands_) {
        if (!out.empty()) out += kind_ == Kind::And ? " && " : " || ";
        out += operand_text(o);
      }
      return out;
    }
  }
  return {};
}

bool can_fire_under(const statemachine::RowDescription& row, spec::Semantics semantics) {
  return GuardExpression(row.guard_tree).under(semantics).satisfiable();
}

}  // namespace fp8sm::explorer
