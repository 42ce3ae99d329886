// The table edge by edge (spec §3), driven with raw events: each test names the edge and
// states what the spec says for each semantics.
#include <fmt/core.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "machine_helpers.hpp"
#include "statemachine/machine.hpp"

namespace fp8sm {
namespace {

using namespace spec;
using statemachine::CheckpointPhase;
using statemachine::Machine;

struct Recorder : statemachine::Hooks {
  std::vector<std::string> log;
  void forward_update() override { log.push_back("fwd"); }
  void backward_update() override { log.push_back("bwd"); }
  void claimed(ModuleId m, bool owner) override { log.push_back(fmt::format("claim{}{}", m, owner ? "+" : "-")); }
  void stash(ModuleId m) override { log.push_back(fmt::format("stash{}", m)); }
  void pop_stash(ModuleId m) override { log.push_back(fmt::format("pop{}", m)); }
  void restore(ModuleId m) override { log.push_back(fmt::format("restore{}", m)); }
};

// The two semantics of TE (main and the PR); fp8sm's own edges are tested in test_fp8sm.cpp.
constexpr Semantics kTeSemantics[] = {Semantics::Upstream, Semantics::Pr3213};

using test_support::forward_module;

TEST(AutocastEdges, DepthZeroEntryArmsOwnershipAndExitUpdatesOnce) {
  for (Semantics s : kTeSemantics) {
    Recorder hooks;
    Machine machine(s, &hooks);
    EXPECT_FALSE(machine.ownership_available());
    machine.fire(AutocastEnter{true, false});
    EXPECT_TRUE(machine.ownership_available());
    EXPECT_TRUE(machine.fp8_enabled());
    EXPECT_EQ(machine.autocast_depth(), 1);
    forward_module(machine, 0);
    forward_module(machine, 1);
    machine.fire(AutocastExit{});
    EXPECT_EQ(machine.autocast_depth(), 0);
    EXPECT_FALSE(machine.fp8_enabled());
    EXPECT_FALSE(machine.ownership_available());  // snap.F was false
    EXPECT_EQ(hooks.log, (std::vector<std::string>{"claim0+", "claim1-", "fwd"}));
  }
}

TEST(AutocastEdges, NoForwardUpdateWithGradOffOrDisabled) {
  Recorder hooks;
  Machine machine(Semantics::Upstream, &hooks);
  machine.fire(GradPush{false});
  machine.fire(AutocastEnter{true, false});
  machine.fire(AutocastExit{});
  machine.fire(GradPop{});
  machine.fire(AutocastEnter{false, false});
  machine.fire(AutocastExit{});
  EXPECT_TRUE(hooks.log.empty());
}

// Nested exit: upstream restores snap.F and revives a bit consumed inside; pr3213 merges.
TEST(AutocastEdges, NestedExitRevivesOnlyUnderUpstream) {
  for (Semantics s : kTeSemantics) {
    Machine machine(s);
    machine.fire(AutocastEnter{true, false});
    machine.fire(AutocastEnter{true, false});
    forward_module(machine, 0);
    EXPECT_FALSE(machine.ownership_available());
    machine.fire(AutocastExit{});
    EXPECT_EQ(machine.ownership_available(), s == Semantics::Upstream) << name(s);
  }
}

// A recompute's own autocast: upstream re-arms at depth 0 and updates at its exit; pr3213
// does neither.
TEST(AutocastEdges, RecomputeAutocastAtDepthZero) {
  for (Semantics s : kTeSemantics) {
    Recorder hooks;
    Machine machine(s, &hooks);
    machine.fire(AutocastEnter{true, true});
    EXPECT_EQ(machine.ownership_available(), s == Semantics::Upstream);
    machine.fire(AutocastExit{});
    EXPECT_EQ(hooks.log.size(), s == Semantics::Upstream ? 1u : 0u);
  }
}

TEST(ClaimEdges, UpstreamReArmsDuringRecomputeSoEveryModuleOwns) {
  for (Semantics s : kTeSemantics) {
    Recorder hooks;
    Machine machine(s, &hooks);
    machine.fire(AutocastEnter{true, false});
    machine.fire(CheckpointForwardEnter{0, true});
    forward_module(machine, 0);  // grad on here: the claims apply
    forward_module(machine, 1);
    machine.fire(CheckpointForwardExit{false});
    machine.fire(AutocastExit{});
    hooks.log.clear();
    ASSERT_FALSE(machine.fire(RecomputeEnter{0}));
    EXPECT_EQ(machine.checkpoint_phase(), CheckpointPhase::Recompute);
    machine.fire(AutocastEnter{true, true});
    forward_module(machine, 0);
    forward_module(machine, 1);
    machine.fire(AutocastExit{});
    machine.fire(RecomputeExit{});
    std::vector<std::string> claims;
    for (const auto& e : hooks.log) {
      if (e.rfind("claim", 0) == 0) claims.push_back(e);
    }
    if (s == Semantics::Upstream) {
      EXPECT_EQ(claims, (std::vector<std::string>{"claim0+", "claim1+"}));
    } else {
      // pr3213 captured F = true before reserving it, so the recompute's first claim owns.
      EXPECT_EQ(claims, (std::vector<std::string>{"claim0+", "claim1-"}));
    }
  }
}

TEST(ClaimEdges, NoClaimWithGradOffOrWithoutFp8) {
  Recorder hooks;
  Machine machine(Semantics::Pr3213, &hooks);
  machine.fire(AutocastEnter{false, false});
  forward_module(machine, 0);  // not FP8
  machine.fire(AutocastExit{});
  machine.fire(AutocastEnter{true, false});
  machine.fire(GradPush{false});
  forward_module(machine, 1);  // FP8, grad off
  machine.fire(GradPop{});
  EXPECT_TRUE(machine.ownership_available());
  EXPECT_TRUE(hooks.log.empty());
}

// Forward exception: pr3213 restores F and invalidates the capture; upstream keeps F.
TEST(CheckpointEdges, ForwardExceptionRestoresOwnershipUnderPr3213) {
  for (Semantics s : kTeSemantics) {
    Machine machine(s);
    machine.fire(AutocastEnter{true, false});
    machine.fire(CheckpointForwardEnter{7, false});
    forward_module(machine, 0);
    EXPECT_FALSE(machine.ownership_available());
    machine.fire(CheckpointForwardExit{true});
    EXPECT_EQ(machine.ownership_available(), s == Semantics::Pr3213) << name(s);
    EXPECT_EQ(machine.checkpoint_phase(), CheckpointPhase::Outside);
    if (s == Semantics::Pr3213) {
      // The frame is invalid: its recompute is refused and changes nothing.
      const std::string before = machine.snapshot();
      auto raised = machine.fire(RecomputeEnter{7});
      ASSERT_TRUE(raised);
      EXPECT_EQ(raised->kind, spec::ExceptionKind::RuntimeError);
      EXPECT_EQ(machine.snapshot(), before);
    }
  }
}

// Recompute-entry failure: upstream sets the flags, then fails to pop, and leaks them.
TEST(CheckpointEdges, RecomputeEntryFailure) {
  Machine upstream(Semantics::Upstream);
  auto raised = upstream.fire(RecomputeEnter{3});
  ASSERT_TRUE(raised);
  EXPECT_EQ(raised->kind, spec::ExceptionKind::IndexError);
  EXPECT_EQ(upstream.checkpoint_phase(), CheckpointPhase::Recompute);

  Machine pr(Semantics::Pr3213);
  const std::string before = pr.snapshot();
  raised = pr.fire(RecomputeEnter{3});
  ASSERT_TRUE(raised);
  EXPECT_EQ(raised->kind, spec::ExceptionKind::RuntimeError);
  EXPECT_EQ(raised->message, "FP8 recompute state was not captured during a completed original forward");
  EXPECT_EQ(pr.snapshot(), before);
}

// Upstream's FIFO hands the front entry to whichever recompute comes first.
TEST(CheckpointEdges, UpstreamFifoPopsTheFront) {
  Machine machine(Semantics::Upstream);
  machine.fire(AutocastEnter{true, false});
  machine.fire(CheckpointForwardEnter{0, false});  // captures F = true
  forward_module(machine, 0);                       // consumes it
  machine.fire(CheckpointForwardExit{false});
  machine.fire(CheckpointForwardEnter{1, false});  // captures F = false
  machine.fire(CheckpointForwardExit{false});
  machine.fire(AutocastExit{});
  ASSERT_EQ(machine.data().fifo.size(), 2u);
  machine.fire(RecomputeEnter{1});  // checkpoint 1 recomputes first, gets checkpoint 0's bit
  EXPECT_TRUE(machine.ownership_available());
  EXPECT_EQ(machine.data().fifo.size(), 1u);
}

// Recompute exit: pr3213 restores the caller's bit outright; upstream clears the flags.
TEST(CheckpointEdges, RecomputeExitRestoresCallerUnderPr3213) {
  for (Semantics s : kTeSemantics) {
    Machine machine(s);
    machine.fire(AutocastEnter{true, false});
    machine.fire(GradPush{false});  // a reentrant forward: no claim
    machine.fire(CheckpointForwardEnter{0, false});
    forward_module(machine, 0);
    machine.fire(CheckpointForwardExit{false});
    machine.fire(GradPop{});
    ASSERT_TRUE(machine.ownership_available());
    machine.fire(RecomputeEnter{0});
    forward_module(machine, 0);
    EXPECT_EQ(machine.ownership_available(), s == Semantics::Upstream);  // re-arm vs plain claim
    machine.fire(RecomputeExit{});
    EXPECT_TRUE(machine.ownership_available());
    EXPECT_EQ(machine.checkpoint_phase(), CheckpointPhase::Outside);
  }
}

// Spec §3.5 "Dispatch": TE 2.20.2's checkpoint() is a plain call with grad off, and its
// _CheckpointFunction.forward enters no ARF when no input needs grad; the PR head predates
// both, and fp8sm keeps its own checkpoint bookkeeping.
TEST(CheckpointEdges, DispatchFollowsGradAndTheInputUnderUpstreamOnly) {
  for (Semantics s : kAllSemantics) {
    const bool upstream = s == Semantics::Upstream;
    Machine machine(s);
    EXPECT_FALSE(machine.checkpoint_call_is_plain()) << name(s);
    EXPECT_FALSE(machine.reentrant_forward_skips_arf(true)) << name(s);
    EXPECT_EQ(machine.reentrant_forward_skips_arf(false), upstream) << name(s);
    machine.fire(GradPush{false});
    EXPECT_EQ(machine.checkpoint_call_is_plain(), upstream) << name(s);
  }
}

// Stash / pop / restore: the original forward stashes, the recompute pops then restores.
TEST(ModuleEdges, StashPopRestore) {
  Recorder hooks;
  Machine machine(Semantics::Pr3213, &hooks);
  machine.fire(AutocastEnter{true, false});
  machine.fire(GradPush{false});  // a reentrant forward: no claim
  machine.fire(CheckpointForwardEnter{0, true});
  forward_module(machine, 4);
  machine.fire(CheckpointForwardExit{false});
  machine.fire(GradPop{});
  machine.fire(AutocastExit{});
  EXPECT_EQ(machine.module(4).stash_depth, 1);
  machine.fire(RecomputeEnter{0});
  machine.fire(AutocastEnter{true, true});
  forward_module(machine, 4);
  EXPECT_EQ(machine.module(4).stash_depth, 0);
  // A second recompute of the same module finds the deque empty.
  auto raised = machine.fire(ModulePrepare{4});
  ASSERT_TRUE(raised);
  EXPECT_EQ(raised->kind, spec::ExceptionKind::IndexError);
  EXPECT_EQ(hooks.log, (std::vector<std::string>{"stash4", "fwd", "pop4", "claim4+", "restore4"}));
}

TEST(ModuleEdges, RecomputeWithoutStashRaisesKeyError) {
  Machine machine(Semantics::Upstream);
  machine.fire(AutocastEnter{true, false});
  forward_module(machine, 2);  // FP8, outside any checkpoint: no stash
  machine.fire(AutocastExit{});
  machine.fire(CheckpointForwardEnter{0, false});
  machine.fire(CheckpointForwardExit{false});
  machine.fire(RecomputeEnter{0});
  auto raised = machine.fire(ModulePrepare{2});
  ASSERT_TRUE(raised);
  EXPECT_EQ(raised->kind, spec::ExceptionKind::KeyError);
  EXPECT_TRUE(machine.module(2).has_saved_for_restore);  // POP saves before it checks
}

TEST(MachineSnapshot, CopiesAreIndependentAndCompareByState) {
  Machine a(Semantics::Upstream);
  a.fire(AutocastEnter{true, false});
  Machine b = a;
  EXPECT_EQ(a.snapshot(), b.snapshot());
  EXPECT_EQ(a.fingerprint(), b.fingerprint());
  b.fire(ModulePrepare{0});
  b.fire(ModuleClaim{0});
  EXPECT_NE(a.snapshot(), b.snapshot());
  EXPECT_NE(a.fingerprint(), b.fingerprint());
  EXPECT_TRUE(a.ownership_available());
  EXPECT_FALSE(b.ownership_available());
  EXPECT_NE(Machine(Semantics::Upstream).snapshot(), Machine(Semantics::Pr3213).snapshot());
}

TEST(MachineRows, EveryRowHasADescription) {
  const auto& rows = Machine::rows().rows();
  EXPECT_GT(rows.size(), 80u);
  for (const auto& row : rows) {
    EXPECT_FALSE(row.source.empty());
    EXPECT_FALSE(row.event.empty());
    EXPECT_EQ(row.to_string().find("mpl_"), std::string::npos) << row.to_string();
  }
}

}  // namespace
}  // namespace fp8sm
