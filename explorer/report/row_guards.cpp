#include "explorer/report/row_guards.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <stdexcept>

namespace fp8sm::explorer {

// Recursive descent over "Name" | "Name<operand, operand, ...>".
class GuardParser {
 public:
  explicit GuardParser(const std::string& text) : text_(text) {}

  GuardExpression parse() {
    GuardExpression e = expression();
    skip_spaces();
    if (at_ != text_.size()) fail("text after the guard");
    return e;
  }

 private:
  const std::string& text_;
  std::size_t at_ = 0;

  [[noreturn]] void fail(const char* what) const {
    throw std::invalid_argument(fmt::format("guard '{}': {} at column {}", text_, what, at_ + 1));
  }
  void skip_spaces() {
    while (at_ < text_.size() && text_[at_] == ' ') ++at_;
  }
  bool take(char c) {
    skip_spaces();
    if (at_ < text_.size() && text_[at_] == c) {
      ++at_;
      return true;
    }
    return false;
  }
  std::string name() {
    skip_spaces();
    const std::size_t begin = at_;
    while (at_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[at_])) != 0 || text_[at_] == '_')) {
      ++at_;
    }
    if (at_ == begin) fail("a guard name expected");
    return text_.substr(begin, at_ - begin);
  }

  GuardExpression expression() {
    const std::string head = name();
    std::vector<GuardExpression> operands;
    if (take('<')) {
      do {
        operands.push_back(expression());
      } while (take(','));
      if (!take('>')) fail("'>' expected");
    }
    GuardExpression e;
    if (head == "none" && operands.empty()) {
      e.kind_ = GuardExpression::Kind::True;
    } else if (head == "Not_") {
      if (operands.size() != 1) fail("Not_ takes one operand");
      e.kind_ = GuardExpression::Kind::Not;
    } else if (head == "And_" || head == "Or_") {
      if (operands.size() < 2) fail("And_ and Or_ take two operands or more");
      e.kind_ = head == "And_" ? GuardExpression::Kind::And : GuardExpression::Kind::Or;
    } else {
      // A named guard is a plain functor: template arguments mean a combinator we do not know.
      if (!operands.empty()) fail("unknown combinator");
      e.kind_ = GuardExpression::Kind::Guard;
      e.name_ = head;
    }
    e.operands_ = std::move(operands);
    return e;
  }
};

GuardExpression GuardExpression::parse(const std::string& component) { return GuardParser(component).parse(); }

// Mirrors guards.hpp's four semantics guards.
std::optional<bool> semantics_guard_value(const std::string& guard, spec::Semantics semantics) {
  if (guard == "Upstream") return semantics == spec::Semantics::Upstream;
  if (guard == "Pr3213") return semantics == spec::Semantics::Pr3213;
  if (guard == "Fp8sm") return semantics == spec::Semantics::Fp8sm;
  if (guard == "Pr3213OrFp8sm") return semantics != spec::Semantics::Upstream;
  return std::nullopt;
}

GuardExpression GuardExpression::under(spec::Semantics semantics) const {
  GuardExpression out;
  switch (kind_) {
    case Kind::True:
    case Kind::False:
      return *this;
    case Kind::Guard:
      if (const std::optional<bool> value = semantics_guard_value(name_, semantics)) {
        out.kind_ = *value ? Kind::True : Kind::False;
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
  return GuardExpression::parse(row.guard).under(semantics).satisfiable();
}

}  // namespace fp8sm::explorer
