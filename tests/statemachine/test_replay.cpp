// fp8sm's replay (docs/semantics.md): a recompute's k-th run of a module replays the k-th run of
// that module in its checkpoint's original forward, with the meta stashed for it when that run
// was FP8 (its rank among the module's FP8 runs names the clone); a run the original did not
// make replays nothing. The growable machine finds that run through an index
// (statemachine/replay_index.hpp), the flat one by scanning its lists: both must give every
// replayed run the same stashed run, on the tricky cases below (by hand) and on random programs
// (against each other).
#include <fmt/core.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <initializer_list>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "interpreter/interpreter.hpp"
#include "spec/format.hpp"
#include "spec/scenario_parser.hpp"
#include "statemachine/machine.hpp"

namespace fp8sm {
namespace {

using namespace spec;
using statemachine::FlatMachine;
using statemachine::Machine;

struct Recorder : statemachine::Hooks {
  std::vector<std::string> log;
  void stash_for(ModuleId m, CaptureId c) override { log.push_back(fmt::format("stash{}@{}", m, c)); }
  void replay_stash(ModuleId m, CaptureId c, unsigned k) override { log.push_back(fmt::format("replay{}@{}#{}", m, c, k)); }
  void release_stash(CaptureId c) override { log.push_back(fmt::format("release@{}", c)); }
};

// A module's forward; its prepare is logged as "m:fp8" or "m:bf16", whichever it chose.
template <class M>
void forward(M& machine, Recorder& hooks, ModuleId m) {
  ASSERT_FALSE(machine.fire(ModulePrepare{m}));
  hooks.log.push_back(fmt::format("{}:{}", m, machine.module(m).fp8 ? "fp8" : "bf16"));
  ASSERT_FALSE(machine.fire(ModuleClaim{m}));
  ASSERT_FALSE(machine.fire(ModuleEndForward{m}));
}

template <class M>
void forwards(M& machine, Recorder& hooks, std::initializer_list<ModuleId> modules) {
  for (ModuleId m : modules) forward(machine, hooks, m);
}

// Checkpoint `capture`'s original forward (reentrant, in an FP8 autocast) runs `modules`; one
// listed as -1 - m runs m outside FP8 (in a nested disabled autocast).
template <class M>
void original_forward(M& machine, Recorder& hooks, CaptureId capture, const std::vector<int>& modules) {
  ASSERT_FALSE(machine.fire(AutocastEnter{true, false}));
  ASSERT_FALSE(machine.fire(GradPush{false, true}));
  ASSERT_FALSE(machine.fire(CheckpointForwardEnter{capture, true}));
  for (int m : modules) {
    if (m >= 0) {
      forward(machine, hooks, static_cast<ModuleId>(m));
      continue;
    }
    ASSERT_FALSE(machine.fire(AutocastEnter{false, false}));
    forward(machine, hooks, static_cast<ModuleId>(-1 - m));
    ASSERT_FALSE(machine.fire(AutocastExit{}));
  }
  ASSERT_FALSE(machine.fire(CheckpointForwardExit{false}));
  ASSERT_FALSE(machine.fire(GradPop{}));
  ASSERT_FALSE(machine.fire(AutocastExit{}));
}

template <class M>
void recompute_begin(M& machine, CaptureId capture) {
  ASSERT_FALSE(machine.fire(RecomputeEnter{capture}));
  ASSERT_FALSE(machine.fire(AutocastEnter{true, true}));
}
template <class M>
void recompute_end(M& machine) {
  ASSERT_FALSE(machine.fire(AutocastExit{}));
  ASSERT_FALSE(machine.fire(RecomputeExit{}));
}

// Each case runs on both machines and must log `expected` on each.
template <class Case>
void on_both_machines(Case&& run, const std::vector<std::string>& expected) {
  {
    Recorder hooks;
    Machine machine(Semantics::Fp8sm, &hooks);
    run(machine, hooks);
    EXPECT_EQ(hooks.log, expected) << "growable machine";
  }
  {
    Recorder hooks;
    FlatMachine machine(Semantics::Fp8sm, &hooks);
    run(machine, hooks);
    EXPECT_EQ(hooks.log, expected) << "flat machine";
  }
}

// Repeated modules, a run outside FP8, a module the original never ran, and more runs of a
// module than the original made.
TEST(Replay, EachRunOfAModuleReplaysTheOriginalsRunOfTheSameRank) {
  on_both_machines(
      [](auto& machine, Recorder& hooks) {
        original_forward(machine, hooks, 4, {0, -2, 0, 1});
        hooks.log.clear();
        recompute_begin(machine, 4);
        forwards(machine, hooks, {1, 1, 0, 2, 0, 0, 1});
        recompute_end(machine);
      },
      {"1:bf16",                // the original's first run of 1 was not FP8: no stashed meta
       "replay1@4#0", "1:fp8",  // its second was, the first FP8 one of 1
       "replay0@4#0", "0:fp8",
       "2:fp8",  // never ran in the original: the recompute's own FP8 run
       "replay0@4#1", "0:fp8",
       "0:fp8",  // a third run of 0: the original made two
       "1:fp8"});
}

// A checkpoint nested in a recompute runs its original forward there (it replays the outer
// checkpoint's runs and stashes its own), and is recomputed while the outer recompute is open:
// each recompute counts its own runs, and the outer one goes on where it was.
TEST(Replay, NestedRecomputesEachCountTheirOwnRuns) {
  on_both_machines(
      [](auto& machine, Recorder& hooks) {
        original_forward(machine, hooks, 4, {0, 0, 0});
        hooks.log.clear();
        recompute_begin(machine, 4);
        forward(machine, hooks, 0);
        ASSERT_FALSE(machine.fire(GradPush{false, true}));
        ASSERT_FALSE(machine.fire(CheckpointForwardEnter{5, true}));
        forward(machine, hooks, 0);
        ASSERT_FALSE(machine.fire(CheckpointForwardExit{false}));
        ASSERT_FALSE(machine.fire(GradPop{}));
        recompute_begin(machine, 5);
        forward(machine, hooks, 0);
        forward(machine, hooks, 0);
        recompute_end(machine);
        forward(machine, hooks, 0);
        forward(machine, hooks, 0);
        recompute_end(machine);
      },
      {"replay0@4#0", "0:fp8",
       "replay0@4#1", "stash0@5", "0:fp8",  // the nested original forward, inside 4's recompute
       "replay0@5#0", "0:fp8",              // 5's recompute: 5's stash, from its first run
       "0:fp8",                             // 5 stashed one run
       "replay0@4#2", "0:fp8",              // 4's recompute goes on with its third run
       "0:fp8"});
}

// A recompute whose body failed after one run (its exits ran) leaves nothing behind: the next
// recompute of the same checkpoint starts from the first run again.
TEST(Replay, ARecomputeAfterAFailedOneStartsFromTheFirstRun) {
  on_both_machines(
      [](auto& machine, Recorder& hooks) {
        original_forward(machine, hooks, 4, {0, 1, 0});
        hooks.log.clear();
        recompute_begin(machine, 4);
        forward(machine, hooks, 0);
        recompute_end(machine);  // the body raised here
        recompute_begin(machine, 4);
        forwards(machine, hooks, {0, 1, 0, 0});
        recompute_end(machine);
      },
      {"replay0@4#0", "0:fp8",
       "replay0@4#0", "0:fp8", "replay1@4#0", "1:fp8", "replay0@4#1", "0:fp8", "0:fp8"});
}

// A released checkpoint's stash is gone (a later recompute replays nothing); the others' stay.
TEST(Replay, AReleaseDropsThatCheckpointsStashAlone) {
  on_both_machines(
      [](auto& machine, Recorder& hooks) {
        original_forward(machine, hooks, 4, {0, 1});
        original_forward(machine, hooks, 5, {1, 0});
        hooks.log.clear();
        ASSERT_FALSE(machine.fire(CheckpointReleased{4}));
        recompute_begin(machine, 4);
        forward(machine, hooks, 0);
        recompute_end(machine);
        recompute_begin(machine, 5);
        forward(machine, hooks, 1);
        forward(machine, hooks, 0);
        recompute_end(machine);
      },
      {"release@4", "0:fp8", "replay1@5#0", "1:fp8", "replay0@5#0", "0:fp8"});
}

// ---- random programs: the growable and the flat interpreter, event by event ------------------

// Every event the interpreter fires (with what it raised) and every hook, in order.
struct Trace : statemachine::Observer {
  std::vector<std::string> lines;
  void event_fired(const AnyEvent& event, const std::optional<RaisedException>& raised) override {
    lines.push_back(event_text(event) + (raised ? fmt::format(" raises {}", raised->kind) : ""));
  }
  void forward_update() override { lines.push_back("forward update"); }
  void backward_update() override { lines.push_back("backward update"); }
  void stash_for(ModuleId m, CaptureId c) override { lines.push_back(fmt::format("stash {} for {}", m, c)); }
  void replay_stash(ModuleId m, CaptureId c, unsigned k) override {
    lines.push_back(fmt::format("replay {} from {} #{}", m, c, k));
  }
  void release_stash(CaptureId c) override { lines.push_back(fmt::format("release {}", c)); }
};

// A block's body: `budget` statements at most, checkpoints and tries nested in each other.
void random_body(std::mt19937& random, int depth, bool in_checkpoint, int& budget, std::string& text) {
  while (budget > 0 && random() % 5 != 0) {
    --budget;
    const unsigned pick = static_cast<unsigned>(random() % 12);
    if (pick < 4) {
      text += fmt::format("linear L{}\n", random() % 3);
    } else if (pick < 8 && depth < 4) {
      static const char* const blocks[] = {"checkpoint reentrant", "checkpoint nonreentrant", "try", "autocast on"};
      const char* block = blocks[pick - 4];
      text += fmt::format("{} {{\n", block);
      random_body(random, depth + 1, in_checkpoint || block[0] == 'c', budget, text);
      text += "}\n";
    } else if (pick == 8) {
      text += in_checkpoint ? "raise recompute\n" : "linear L0\n";
    } else if (!in_checkpoint) {
      text += random() % 2 == 0 ? "backward retain\n" : "backward\n";
    }
  }
}

TEST(Replay, TheGrowableAndTheFlatInterpreterAgreeOnRandomPrograms) {
  std::mt19937 random(2512);
  int compared = 0, replaying = 0;
  for (int program = 0; program < 10000; ++program) {
    std::string text = "autocast on {\n";
    int budget = 10;
    random_body(random, 1, false, budget, text);
    text += "}\nbackward\nbackward\n";
    const Program parsed = parse_scenario(text);
    Trace growable_trace, flat_trace;
    interpreter::Interpreter growable(Semantics::Fp8sm, &growable_trace);
    auto flat = std::make_unique<interpreter::FlatInterpreter>(Semantics::Fp8sm, &flat_trace);
    growable.run(parsed);
    try {
      flat->run(parsed);
    } catch (const statemachine::CapacityError&) {
      continue;  // past the flat state's capacities
    }
    ++compared;
    replaying += std::any_of(growable_trace.lines.begin(), growable_trace.lines.end(),
                             [](const std::string& line) { return line.rfind("replay", 0) == 0; })
                     ? 1
                     : 0;
    ASSERT_EQ(growable_trace.lines, flat_trace.lines) << text;
    ASSERT_EQ(growable.machine().snapshot(), flat->machine().snapshot()) << text;
  }
  EXPECT_GT(compared, 9000) << replaying;
  EXPECT_GT(replaying, compared / 5) << compared;  // the programs do recompute and replay
}

}  // namespace
}  // namespace fp8sm
