#include "spec/semantics.hpp"

namespace fp8sm::spec {

std::string_view name(Semantics semantics) {
  switch (semantics) {
    case Semantics::Upstream: return "upstream";
    case Semantics::Pr3213: return "pr3213";
    case Semantics::Fp8sm: return "fp8sm";
  }
  return "?";
}

std::optional<Semantics> parse_semantics(std::string_view text) {
  for (Semantics s : kAllSemantics) {
    if (name(s) == text) return s;
  }
  return std::nullopt;
}

}  // namespace fp8sm::spec
