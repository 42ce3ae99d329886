// What an invariant observer found: a violation is a small value (which invariant, why, a few
// numbers), put into words only when a report or a counterexample prints it. The exhaustive
// search judges millions of transitions and keeps the first reason of each invariant it sees;
// building a sentence for each would be most of its allocations.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "spec/invariants.hpp"

namespace fp8sm::explorer {

enum class Reason : std::uint8_t {
  // I1
  NoForwardUpdateAtExit,
  SecondForwardUpdateAtExit,
  ForwardUpdateElsewhere,
  // I2
  BackwardAfterPassUpdate,
  SecondBackwardUpdate,
  NoBackwardUpdateInPass,
  // I3
  LiveOwners,          // a: live owners, b: 1 for a recompute scope
  OwnershipRevived,
  BitLeavesScopeTrue,  // b: 1 for a recompute scope
  // I4
  StashLeftAtStepEnd,  // a: module, b: entries
  KeptStashOfDroppedCheckpoint,  // a: entries
  FifoLeftAtStepEnd,   // a: entries
  PopFoundNothing,     // a: exception kind, text: its message
  BitFromAnotherCheckpoint,
  UnpairedStashPop,    // a: module
  ReplayOutsideRecompute,  // a: module
  ReplayNeverKept,     // a: module
  // I5
  FoldsRecomputeAmax,
  FoldsEarlierStepAmax,
  RecomputeChangesScaling,  // a: module
  RecomputeSeesOtherScaling,  // a: module
  // I6
  CheckpointFlagsLeftSet,
  Fp8LeftEnabled,
  BitLeftSet,
  // I7
  AutocastDepthAtStepEnd,
  // I8
  TransparencyRaises,
  TransparencyCounts,  // a/b the program's counts, c/d the reference's
  TransparencyNumerics,
  // I9
  CastButNotRegistered,  // a: module
  RegisteredTwice,       // a: module
  RegisteredInRecompute,  // a: module
};

struct Violation {
  spec::Invariant invariant = spec::Invariant::I1;
  Reason reason = Reason::NoForwardUpdateAtExit;
  std::uint16_t a = 0, b = 0, c = 0, d = 0;
  std::string_view text;  // a string literal, when the reason quotes one
};

// One sentence for a report.
std::string describe(const Violation& violation);

// The violations of one transition (or one step), the first of each invariant.
class Verdict {
 public:
  void add(const Violation& v) {
    if (!violations_.contains(v.invariant)) first_[static_cast<std::size_t>(v.invariant)] = v;
    violations_.add(v.invariant);
  }
  void merge(const Verdict& other) {
    for (spec::Invariant i : spec::kAllInvariants) {
      if (other.violations_.contains(i)) add(other.first(i));
    }
  }
  void clear() { violations_ = spec::InvariantSet{}; }
  const spec::InvariantSet& violations() const { return violations_; }
  bool contains(spec::Invariant i) const { return violations_.contains(i); }
  const Violation& first(spec::Invariant i) const { return first_[static_cast<std::size_t>(i)]; }
  std::string reason(spec::Invariant i) const { return describe(first(i)); }

 private:
  spec::InvariantSet violations_;
  std::array<Violation, spec::kAllInvariants.size()> first_{};
};

}  // namespace fp8sm::explorer
