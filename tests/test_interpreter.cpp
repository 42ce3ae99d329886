// The interpreter: exceptions and `try`, steps, tapes, recompute order. Expectations come
// from docs/scenarios.md (the language) and spec §3.5, not from running the code.
#include <fmt/core.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "scenario_helpers.hpp"
#include "interpreter/interpreter.hpp"

namespace fp8sm {
namespace {

using spec::Semantics;

struct ExtentLog : statemachine::Observer {
  std::vector<std::string> log;
  void recompute_begin(statemachine::CaptureId c) override { log.push_back(fmt::format("rc{}", c)); }
  void node_discarded(statemachine::NodeId n) override { log.push_back(fmt::format("discard{}", n)); }
};

std::vector<spec::StepResult> run(const std::string& text, Semantics s = Semantics::Pr3213,
                                  statemachine::Observer* observer = nullptr) {
  interpreter::Interpreter interpreter(s, observer);
  interpreter.run(spec::parse_scenario(text));
  return interpreter.steps();
}

TEST(Exceptions, TryCatchesAndDiscardsWhatItsBodyRecorded) {
  // L0 owns the backward update but its node is discarded; L1 finds F consumed: no update.
  ExtentLog log;
  const auto steps = run("autocast on { try { linear L0; raise always }; linear L1 }; backward",
                         Semantics::Upstream, &log);
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_TRUE(steps[0].raised.empty());
  EXPECT_EQ(steps[0].forward_updates, 1);
  EXPECT_EQ(steps[0].backward_updates, 0);
  EXPECT_EQ(log.log, (std::vector<std::string>{"discard0"}));
}

TEST(Exceptions, UncaughtExceptionEndsTheStepAndTheNextStepRuns) {
  const auto steps = run(
      "autocast on { linear L0; raise always; linear L1 }; backward; step;"
      "autocast on { linear L0 }; backward");
  ASSERT_EQ(steps.size(), 2u);
  ASSERT_EQ(steps[0].raised.size(), 1u);
  EXPECT_EQ(steps[0].raised[0].kind, spec::ExceptionKind::UserError);
  // Unwinding through the outermost enabled autocast with grad on still updates (spec §3.1);
  // the step's backward is skipped.
  EXPECT_EQ(steps[0].forward_updates, 1);
  EXPECT_EQ(steps[0].backward_updates, 0);
  EXPECT_EQ(steps[1].forward_updates, 1);
  EXPECT_EQ(steps[1].backward_updates, 1);
  EXPECT_TRUE(steps[1].raised.empty());
}

TEST(Exceptions, RaiseOriginalAndRaiseRecompute) {
  auto steps = run("autocast on { checkpoint reentrant { linear L0; raise original } }; backward");
  ASSERT_EQ(steps.at(0).raised.size(), 1u);  // raised in the forward
  EXPECT_EQ(steps[0].backward_updates, 0);
  steps = run("autocast on { checkpoint reentrant { linear L0; raise recompute } }; backward");
  ASSERT_EQ(steps.at(0).raised.size(), 1u);  // raised in the backward's recompute
  EXPECT_EQ(steps[0].forward_updates, 1);
  EXPECT_EQ(steps[0].raised[0].message, "raised by 'raise recompute'");
  // Caught inside the body during the recompute, the rest of the try is skipped only there.
  steps = run("autocast on { checkpoint reentrant { try { raise recompute; linear L1 }; linear L0 } }; backward");
  EXPECT_TRUE(steps.at(0).raised.empty());
  EXPECT_EQ(steps[0].backward_updates, 1);
}

TEST(Exceptions, RecomputeBodyFailureLeavesNothingBehindUnderPr3213) {
  interpreter::Interpreter interpreter(Semantics::Pr3213, nullptr);
  interpreter.run(spec::parse_scenario("autocast on { checkpoint reentrant { linear L0; raise recompute } }; backward"));
  const auto& m = interpreter.machine();
  EXPECT_EQ(m.autocast_depth(), 0);
  EXPECT_EQ(m.checkpoint_phase(), statemachine::CheckpointPhase::Outside);
  EXPECT_FALSE(m.ownership_available());
  EXPECT_TRUE(m.grad_enabled());
}

TEST(Tapes, SavedTapesAreBackpropagatedByName) {
  const auto steps = run("autocast on { linear L0 }; save A; autocast on { linear L1 }; backward A; backward");
  EXPECT_EQ(steps.at(0).forward_updates, 2);
  EXPECT_EQ(steps.at(0).backward_updates, 2);
}

// A graph backpropagated without retain runs again up to the first node that pass freed (torch
// releases a node's saved tensors once its backward completes, TE's Linear its backward
// objects): TE's Linear raises AttributeError on its first line (upstream, pr3213); under fp8sm
// it gets torch's RuntimeError for the freed saved tensors, as a reentrant checkpoint's node
// does under every semantics. A graph without nodes runs an empty pass again.
TEST(Tapes, SecondBackwardWithoutRetainRaisesAtTheFirstFreedNode) {
  struct Case {
    const char* text;
    Semantics semantics;
    const char* raised;  // nullptr: nothing
    int backward_updates;
  };
  for (const Case& c : {Case{"autocast on { linear L0 }; save A; backward A; backward A", Semantics::Upstream,
                             "AttributeError", 1},
                        Case{"autocast on { linear L0 }; save A; backward A; backward A", Semantics::Pr3213,
                             "AttributeError", 1},
                        Case{"autocast on { linear L0 }; save A; backward A; backward A", Semantics::Fp8sm,
                             "RuntimeError", 1},
                        Case{"checkpoint reentrant { }; save A; backward A; backward A", Semantics::Upstream,
                             "RuntimeError", 0},
                        Case{"save A; backward A; backward A", Semantics::Upstream, nullptr, 0}}) {
    const auto steps = run(c.text, c.semantics);
    if (c.raised == nullptr) {
      EXPECT_TRUE(steps.at(0).raised.empty()) << c.text;
    } else {
      ASSERT_EQ(steps.at(0).raised.size(), 1u) << c.text;
      EXPECT_STREQ(spec::name(steps[0].raised[0].kind), c.raised) << c.text << " under " << spec::name(c.semantics);
    }
    EXPECT_EQ(steps[0].backward_updates, c.backward_updates) << c.text;
  }
  // A node the first pass never reached (it failed before) runs in the second: the IndexError
  // of the unreached slot comes again, and the Linear before it runs its backward then.
  const auto steps = run(
      "autocast on { checkpoint nonreentrant { linear L0; try { raise recompute; linear L1 } } }; save A; "
      "backward A; step; backward A");
  ASSERT_EQ(steps.size(), 2u);
  ASSERT_EQ(steps[0].raised.size(), 1u);
  EXPECT_EQ(steps[0].raised[0].kind, spec::ExceptionKind::IndexError);
  ASSERT_EQ(steps[1].raised.size(), 1u);
  EXPECT_EQ(steps[1].raised[0].kind, spec::ExceptionKind::IndexError);
  // A retained graph: the second backward through TE's Linear raises AttributeError (spec
  // §3.3); fp8sm's runs it.
  auto retained = run("autocast on { linear L0 }; backward retain; backward");
  ASSERT_EQ(retained.at(0).raised.size(), 1u);
  EXPECT_EQ(retained[0].raised[0].kind, spec::ExceptionKind::AttributeError);
  EXPECT_EQ(retained[0].backward_updates, 1);
  retained = run("autocast on { linear L0 }; backward retain; backward", Semantics::Fp8sm);
  EXPECT_TRUE(retained.at(0).raised.empty());
  EXPECT_EQ(retained[0].backward_updates, 2);
}

TEST(Tapes, BackwardOfAnEmptyGraphIsAnEmptyPass) {
  struct Case {
    const char* text;
    int backward_updates_in_last_step;
  };
  for (const Case& c : {Case{"backward", 0}, Case{"no_grad { autocast on { linear L0 } }; backward", 0},
                        Case{"autocast on { linear L0 }; step; backward", 0},
                        Case{"autocast on { linear L0 }; backward; backward", 1}}) {
    const auto steps = run(c.text);
    EXPECT_TRUE(steps.back().raised.empty()) << c.text;
    EXPECT_EQ(steps.back().backward_updates, c.backward_updates_in_last_step) << c.text;
  }
}

// An uncaught exception abandons the step's graph: its owners are discarded like a try's.
TEST(Exceptions, UncaughtExceptionDiscardsTheStepGraphButNotSavedTapes) {
  ExtentLog log;
  run("autocast on { linear L0 }; save A; autocast on { linear L1; raise always }", Semantics::Pr3213, &log);
  EXPECT_EQ(log.log, (std::vector<std::string>{"discard1"}));
}

TEST(Steps, EndOfFileEndsTheLastStepAndATrailingStepAddsNone) {
  EXPECT_EQ(run("").size(), 0u);
  EXPECT_EQ(run("autocast on { linear L0 }").size(), 1u);
  EXPECT_EQ(run("autocast on { linear L0 }; step").size(), 1u);
  EXPECT_EQ(run("autocast on { linear L0 }; step; step").size(), 2u);
}

// Spec §4 row 3: non-reentrant frames recompute at their last recorded node, in backward
// order (checkpoint 2, 1, 0); row 6: reentrant ones at their node's turn.
TEST(RecomputeOrder, ReverseRecordingOrder) {
  for (const char* mode : {"nonreentrant", "reentrant"}) {
    ExtentLog log;
    const std::string m = mode;
    run("autocast on { checkpoint " + m + " { linear L0 }; checkpoint " + m + " { linear L1 }; checkpoint " + m +
            " { linear L2 } }; backward",
        Semantics::Pr3213, &log);
    EXPECT_EQ(log.log, (std::vector<std::string>{"rc2", "rc1", "rc0"})) << mode;
  }
}

// A non-reentrant frame recomputes at most once; a reentrant node at every backward through it.
TEST(RecomputeOrder, RetainedGraphRecomputes) {
  ExtentLog nr;
  run("autocast on { checkpoint nonreentrant { linear L0 } }; backward retain; backward", Semantics::Pr3213, &nr);
  EXPECT_EQ(nr.log, (std::vector<std::string>{"rc0"}));
  ExtentLog re;
  run("autocast on { checkpoint reentrant { linear L0 } }; backward retain; backward", Semantics::Pr3213, &re);
  EXPECT_EQ(re.log, (std::vector<std::string>{"rc0", "rc0"}));
}

// Nested reentrant (spec §4 row 7): the inner checkpoint records its node during the outer
// recompute (grad is on there) and recomputes during the outer's sub-backward.
TEST(RecomputeOrder, NestedReentrantRecomputesInnerDuringOuterSubBackward) {
  ExtentLog log;
  run("autocast on { checkpoint reentrant { checkpoint reentrant { linear L0 }; linear L1 } }; backward",
      Semantics::Pr3213, &log);
  // Outer is capture 0, inner 1 in the forward; the outer recompute creates inner capture 2.
  EXPECT_EQ(log.log, (std::vector<std::string>{"rc0", "rc2"}));
}

// A reentrant checkpoint under no_grad records no node: nothing to recompute. Upstream's L1
// then owns the backward update; pr3213 reserved the bit at the checkpoint's entry (spec §3.4:
// reentrant and fp8_enabled) for a recompute that never comes, so nobody owns it.
TEST(RecomputeOrder, NoNodeUnderNoGrad) {
  for (Semantics s : {Semantics::Upstream, Semantics::Pr3213}) {
    ExtentLog log;
    const auto steps =
        run("autocast on { no_grad { checkpoint reentrant { linear L0 } }; linear L1 }; backward", s, &log);
    EXPECT_TRUE(log.log.empty());
    EXPECT_EQ(steps.at(0).backward_updates, s == Semantics::Upstream ? 1 : 0) << spec::name(s);
  }
}

// TE 2.20.2's checkpoint() returns function(*args) when grad is disabled, before any FP8
// bookkeeping (spec §3.5 "Dispatch"): under upstream a checkpoint under no_grad (or inside a
// reentrant checkpoint's forward, which runs with grad off) pushes no FIFO entry, so an
// uncaptured recompute after it finds the FIFO empty. The PR head predates that return: it
// captures, and its uncaptured recompute is refused with RuntimeError as always.
TEST(Checkpoints, WithGradOffUpstreamCallsTheFunctionPlainly) {
  struct Case {
    const char* text;
    Semantics semantics;
    const char* raised;
  };
  for (const Case& c :
       {Case{"no_grad { checkpoint nonreentrant { recompute_uncaptured } }", Semantics::Upstream, "IndexError"},
        Case{"no_grad { checkpoint reentrant { recompute_uncaptured } }", Semantics::Upstream, "IndexError"},
        Case{"checkpoint reentrant { recompute_uncaptured; checkpoint nonreentrant { recompute_uncaptured } }",
             Semantics::Upstream, "IndexError"},
        Case{"no_grad { checkpoint nonreentrant { recompute_uncaptured } }", Semantics::Pr3213, "RuntimeError"}}) {
    const auto steps = run(c.text, c.semantics);
    ASSERT_EQ(steps.at(0).raised.size(), 1u) << c.text;
    EXPECT_STREQ(spec::name(steps[0].raised[0].kind), c.raised) << c.text << " under " << spec::name(c.semantics);
  }
  // With grad on the checkpoint captures as ever: its entry is what the recompute pops.
  EXPECT_TRUE(run("checkpoint nonreentrant { recompute_uncaptured }", Semantics::Upstream).at(0).raised.empty());
}

}  // namespace
}  // namespace fp8sm
