#include "spec/invariants.hpp"

#include <fmt/format.h>

#include <vector>

namespace fp8sm::spec {

std::string_view id(Invariant invariant) {
  static constexpr std::array<std::string_view, 9> kIds = {"I1", "I2", "I3", "I4", "I5",
                                                           "I6", "I7", "I8", "I9"};
  return kIds[static_cast<unsigned>(invariant)];
}

std::string_view summary(Invariant invariant) {
  switch (invariant) {
    case Invariant::I1:
      return "one forward update per user autocast exit reaching depth 0 (enabled, grad on), "
             "and none at any other time";
    case Invariant::I2:
      return "each backward pass running an FP8 module backward makes exactly one backward "
             "update, after the last such module";
    case Invariant::I3:
      return "per ownership scope at most one live owner; consumed ownership never revived "
             "while its owner is live; a scope exit leaves the bit no higher than at entry";
    case Invariant::I4:
      return "every stash entry popped once, by its own checkpoint's recompute, in its step; "
             "captured ownership bits likewise; nothing left at step end";
    case Invariant::I5:
      return "a recompute sees the same forward scaling as the original forward and leaves it "
             "unchanged; no forward update folds a recompute's or an earlier step's amax";
    case Invariant::I6:
      return "after each top-level statement: no checkpoint region or phase, FP8 disabled, "
             "ownership bit false outside autocast";
    case Invariant::I7:
      return "autocast depth never negative, and zero at each step end";
    case Invariant::I8:
      return "checkpoint transparency: the same counts and scaling state as the program "
             "with its checkpoints removed";
    case Invariant::I9:
      return "a module registers once, from a normal-branch FP8 forward, before any update "
             "that needs its amax; a recompute never registers";
  }
  return "";
}

std::optional<Invariant> parse_invariant(std::string_view text) {
  for (Invariant i : kAllInvariants) {
    if (id(i) == text) return i;
  }
  return std::nullopt;
}

std::string InvariantSet::to_string() const {
  std::vector<std::string_view> ids;
  for (Invariant i : kAllInvariants) {
    if (contains(i)) ids.push_back(id(i));
  }
  return ids.empty() ? "none" : fmt::format("{}", fmt::join(ids, " "));
}

}  // namespace fp8sm::spec
