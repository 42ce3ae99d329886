// The semantics the model can run: which reading of the FP8 state logic the table follows.
#pragma once

#include <array>
#include <optional>
#include <string_view>

namespace fp8sm::spec {

enum class Semantics : unsigned char {
  Upstream,  // TransformerEngine main (spec "UPSTREAM", legacy)
  Pr3213,    // the fix under review, PR #3213 at its final head (spec "FIXED")
  Fp8sm,     // ours: the semantics the explorer proves (docs/semantics.md)
};

inline constexpr std::array<Semantics, 3> kAllSemantics = {Semantics::Upstream, Semantics::Pr3213,
                                                          Semantics::Fp8sm};

std::string_view name(Semantics semantics);
std::optional<Semantics> parse_semantics(std::string_view text);

}  // namespace fp8sm::spec
