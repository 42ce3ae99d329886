// fp8sm, our semantics (docs/semantics.md): its rules edge by edge, and its verdicts on the
// catalogue and on every program of the language up to a small depth.
#include <fmt/core.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "explorer/search/search.hpp"
#include "machine_helpers.hpp"
#include "scenario_helpers.hpp"
#include "statemachine/machine.hpp"

namespace fp8sm {
namespace {

using namespace spec;
using statemachine::Machine;

struct Recorder : statemachine::Hooks {
  std::vector<std::string> log;
  void forward_update() override { log.push_back("fwd"); }
  void backward_update() override { log.push_back("bwd"); }
  void discard_forward_amax() override { log.push_back("discard"); }
  void claimed(ModuleId m, bool owner) override { log.push_back(fmt::format("claim{}{}", m, owner ? "+" : "-")); }
  void stash_for(ModuleId m, CaptureId c) override { log.push_back(fmt::format("stash{}@{}", m, c)); }
  void replay_stash(ModuleId m, CaptureId c, unsigned k) override {
    log.push_back(fmt::format("replay{}@{}#{}", m, c, k));
  }
  void restore(ModuleId m) override { log.push_back(fmt::format("restore{}", m)); }
  void release_stash(CaptureId c) override { log.push_back(fmt::format("release@{}", c)); }
};

using test_support::forward_module;

// The backward update belongs to the pass: nobody owns it; one update when a pass that ran an
// FP8 module backward completes, none when it failed or ran none.
TEST(Fp8smEdges, BackwardUpdateAtTheEndOfThePass) {
  Recorder hooks;
  Machine machine(Semantics::Fp8sm, &hooks);
  machine.fire(AutocastEnter{true, false});
  forward_module(machine, 0);
  forward_module(machine, 1);
  machine.fire(AutocastExit{});
  machine.fire(BackwardPassBegin{});
  machine.fire(ModuleBackward{1, false, true});
  machine.fire(ModuleBackward{0, false, true});
  EXPECT_EQ(hooks.log, (std::vector<std::string>{"claim0-", "claim1-", "fwd"}));
  machine.fire(BackwardPassEnd{true});
  EXPECT_EQ(hooks.log.back(), "bwd");
  hooks.log.clear();
  machine.fire(BackwardPassBegin{});
  machine.fire(ModuleBackward{0, false, false});  // not FP8
  machine.fire(BackwardPassEnd{true});
  machine.fire(BackwardPassBegin{});
  machine.fire(ModuleBackward{0, false, true});
  machine.fire(BackwardPassEnd{false});  // an exception left the pass
  EXPECT_TRUE(hooks.log.empty());
}

// The forward update follows the program's grad mode: a reentrant checkpoint's no-grad forward
// (an internal push) does not hide it; a no_grad block does, and then the amaxes are dropped.
TEST(Fp8smEdges, ForwardUpdateFollowsTheProgramsGradMode) {
  Recorder hooks;
  Machine machine(Semantics::Fp8sm, &hooks);
  machine.fire(GradPush{false, true});
  machine.fire(AutocastEnter{true, false});
  machine.fire(AutocastExit{});
  machine.fire(GradPop{});
  machine.fire(GradPush{false, false});
  machine.fire(AutocastEnter{true, false});
  machine.fire(AutocastExit{});
  machine.fire(GradPop{});
  EXPECT_EQ(hooks.log, (std::vector<std::string>{"fwd", "discard"}));
}

TEST(Fp8smEdges, EnabledAutocastInsideADisabledOneDropsItsAmaxes) {
  Recorder hooks;
  Machine machine(Semantics::Fp8sm, &hooks);
  machine.fire(AutocastEnter{false, false});
  machine.fire(AutocastEnter{true, false});
  forward_module(machine, 0);
  machine.fire(AutocastExit{});
  machine.fire(AutocastExit{});
  EXPECT_EQ(hooks.log, (std::vector<std::string>{"claim0-", "discard"}));
}

// The stash belongs to the checkpoint instance; every recompute replays it (k-th entry for the
// module's k-th run), the live meta comes back after, and the release drops it.
TEST(Fp8smEdges, StashIsReplayedNotPoppedAndReleased) {
  Recorder hooks;
  Machine machine(Semantics::Fp8sm, &hooks);
  machine.fire(AutocastEnter{true, false});
  machine.fire(GradPush{false, true});
  machine.fire(CheckpointForwardEnter{4, true});
  forward_module(machine, 0);
  forward_module(machine, 0);
  machine.fire(CheckpointForwardExit{false});
  machine.fire(GradPop{});
  machine.fire(AutocastExit{});
  for (int recompute = 0; recompute < 2; ++recompute) {
    hooks.log.clear();
    ASSERT_FALSE(machine.fire(RecomputeEnter{4}));
    machine.fire(AutocastEnter{true, true});
    forward_module(machine, 0);
    forward_module(machine, 0);
    machine.fire(AutocastExit{});
    machine.fire(RecomputeExit{});
    EXPECT_EQ(hooks.log, (std::vector<std::string>{"replay0@4#0", "claim0-", "restore0", "replay0@4#1",
                                                   "claim0-", "restore0"}))
        << "recompute " << recompute;
  }
  hooks.log.clear();
  machine.fire(CheckpointReleased{4});
  EXPECT_EQ(hooks.log, (std::vector<std::string>{"release@4"}));
  const auto [first, last] = machine.data().stash_of(4);
  EXPECT_EQ(first, last);
}

// The TE semantics ignore the events fp8sm added.
TEST(Fp8smEdges, NewEventsAreNoOpsForTheTeSemantics) {
  for (Semantics s : {Semantics::Upstream, Semantics::Pr3213}) {
    Recorder hooks;
    Machine machine(s, &hooks);
    const std::string before = machine.snapshot();
    machine.fire(BackwardPassBegin{});
    machine.fire(BackwardPassEnd{true});
    machine.fire(CheckpointReleased{0});
    EXPECT_TRUE(hooks.log.empty());
    EXPECT_EQ(machine.snapshot(), before);
  }
}

// Every configuration of spec §7: one forward and one backward update per step wherever the
// program without checkpoints has them, and no invariant violated.
TEST(Fp8smVerdicts, CatalogueViolatesNothing) {
  for (const CatalogueEntry& entry : catalogue()) {
    const auto report = explorer::run_scenario(test_support::catalogue_program(entry.name), Semantics::Fp8sm);
    for (std::size_t s = 0; s < report.steps.size(); ++s) {
      EXPECT_TRUE(report.steps[s].violations.empty())
          << entry.name << " step " << s + 1 << ": " << report.steps[s].violations.to_string();
    }
  }
}

TEST(Fp8smVerdicts, SeedRowsGiveOneAndOne) {
  for (const char* name : {"no-checkpoint", "nonreentrant-single", "nonreentrant-per-layer", "reentrant-single-1-layer",
                           "reentrant-single-3-layers", "reentrant-per-layer", "nested-reentrant"}) {
    const auto report = explorer::run_scenario(test_support::catalogue_program(name), Semantics::Fp8sm);
    EXPECT_EQ(report.steps.at(0).forward_updates, 1) << name;
    EXPECT_EQ(report.steps.at(0).backward_updates, 1) << name;
  }
}

// Exhaustive, at the depth a unit test affords (CI runs deeper: tests/explorer/test_verdicts.cpp).
TEST(Fp8smVerdicts, NoProgramOfUpToFourStatementsViolatesAnything) {
  explorer::SearchOptions options;
  options.semantics = Semantics::Fp8sm;
  options.depth = 4;
  options.threads = 2;
  const auto result = explorer::search(options);
  EXPECT_TRUE(result.complete);
  for (const auto& c : result.counterexamples) {
    ADD_FAILURE() << spec::id(c.invariant) << ": " << c.reason << "\n" << spec::print_scenario(c.program);
  }
}

}  // namespace
}  // namespace fp8sm
