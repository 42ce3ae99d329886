// The interpreter: exceptions and `try`, steps, tapes, recompute order. Expectations come
// from docs/scenarios.md (the language) and spec §3.5, not from running the code.
#include <fmt/core.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "interpreter/interpreter.hpp"
#include "scenario_helpers.hpp"

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

// A pass without retain over a saved tape fails in a checkpoint's recompute: torch frees a
// node's saved tensors only when its backward returns, so the tape keeps the checkpoint's
// node (its context lives: TE's plugin sees no release) and a later pass recomputes it. Its
// checkpoint is released when the tape is saved over, not at the failure; the step's own
// graph, which no statement names again, is dropped at the failure as before.
struct DropLog : statemachine::Observer {
  std::vector<std::string> log;
  void node_discarded(statemachine::NodeId n) override { log.push_back(fmt::format("discard{}", n)); }
  void checkpoint_dropped(statemachine::CaptureId c) override { log.push_back(fmt::format("release{}", c)); }
  void recompute_begin(statemachine::CaptureId c) override { log.push_back(fmt::format("rc{}", c)); }
};

TEST(Tapes, AFailedPassOverATapeKeepsTheNodesItDidNotComplete) {
  for (Semantics s : spec::kAllSemantics) {
    DropLog kept;
    run("checkpoint reentrant { raise recompute }; save A; try { backward A }; try { backward A }; save A", s, &kept);
    // Upstream's second recompute fails at its entry (the pop of the captured-bit FIFO its
    // first emptied, TE's IndexError), before the recompute begins.
    const std::vector<std::string> twice = {"rc0", "rc0", "release0"}, once = {"rc0", "release0"};
    EXPECT_EQ(kept.log, s == Semantics::Upstream ? once : twice) << spec::name(s);
    DropLog dropped;
    run("checkpoint reentrant { raise recompute }; try { backward }; backward", s, &dropped);
    EXPECT_EQ(dropped.log, (std::vector<std::string>{"rc0", "discard0", "release0"})) << spec::name(s);
  }
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

// Only nodes dropped unused are discarded: L0 and L1 ran their backward (a retained graph)
// before the exception ended the step, so they are not; the L0 recorded after is (node 2).
// An owner that made its update stays a live owner for I3 (spec §5), as TE's observer has it.
TEST(Exceptions, NodesWhoseBackwardRanAreNotDiscardedWithTheirStep) {
  ExtentLog log;
  const auto steps = run("autocast on { linear L0; linear L1; backward retain; linear L0; raise always }",
                         Semantics::Upstream, &log);
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0].backward_updates, 1);  // L0 owned, and its backward ran
  EXPECT_EQ(log.log, (std::vector<std::string>{"discard2"}));
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

// ---- data: a chain input that does not require grad --------------------------------------
// Expectations from TE 2.20.2's code (distributed.py, _CheckpointFunction.forward and
// checkpoint(); module/linear.py, _Linear.forward's claim) and from the PR head's, as
// docs/scenarios.md and spec §3.5 "Dispatch" state them; tests/scenarios/edge-*-data*.scn run the
// same on TE.

struct CheckpointLog : statemachine::Observer {
  std::vector<std::string> log;
  void checkpoint_forward_begin(statemachine::CaptureId c) override { log.push_back(fmt::format("fwd{}", c)); }
  void recompute_begin(statemachine::CaptureId c) override { log.push_back(fmt::format("rc{}", c)); }
  void checkpoint_dropped(statemachine::CaptureId c) override { log.push_back(fmt::format("drop{}", c)); }
};

// The FIFO of captured ownership bits after the forward `text` (upstream's, spec §3.4).
std::size_t fifo_after(const std::string& text, Semantics s, CheckpointLog* log = nullptr) {
  interpreter::Interpreter interpreter(s, log);
  interpreter.run(spec::parse_scenario(text));
  return interpreter.machine().data().fifo.size();
}

// A reentrant checkpoint on data, grad on: torch records no node, so nothing is recomputed and
// the body's module makes no backward update. Under upstream the forward ARF is not entered (no
// capture, no FIFO entry); the PR head and fp8sm capture, and release the capture unused.
TEST(DataInputs, AReentrantCheckpointOnDataRecordsNoNode) {
  for (Semantics s : spec::kAllSemantics) {
    SCOPED_TRACE(spec::name(s));
    CheckpointLog log;
    const auto steps = run("autocast on { data; checkpoint reentrant { linear L0 } }; backward", s, &log);
    ASSERT_TRUE(steps.at(0).raised.empty());
    EXPECT_EQ(steps[0].forward_updates, 1);
    EXPECT_EQ(steps[0].backward_updates, 0);
    const std::vector<std::string> captured_unused = {"fwd0", "drop0"};
    EXPECT_EQ(log.log, s == Semantics::Upstream ? std::vector<std::string>() : captured_unused);
  }
  // The same without data: upstream's recompute updates twice more (spec §4), the others once.
  const auto upstream = run("autocast on { checkpoint reentrant { linear L0 } }; backward", Semantics::Upstream);
  EXPECT_EQ(upstream.at(0).forward_updates, 2);
  EXPECT_EQ(upstream[0].backward_updates, 1);
  const auto pr3213 = run("autocast on { checkpoint reentrant { linear L0 } }; backward", Semantics::Pr3213);
  EXPECT_EQ(pr3213.at(0).forward_updates, 1);
  EXPECT_EQ(pr3213[0].backward_updates, 1);
  // Upstream: no FIFO entry, where the checkpoint on an input that requires grad leaves one.
  EXPECT_EQ(fifo_after("autocast on { data; checkpoint reentrant { linear L0 } }", Semantics::Upstream), 0u);
  EXPECT_EQ(fifo_after("autocast on { checkpoint reentrant { linear L0 } }", Semantics::Upstream), 1u);
  // So the uncaptured recompute after it finds the FIFO empty (upstream) or is refused (pr3213).
  const auto uncaptured =
      run("autocast on { data; checkpoint reentrant { linear L0 } }; recompute_uncaptured", Semantics::Upstream);
  ASSERT_EQ(uncaptured.at(0).raised.size(), 1u);
  EXPECT_EQ(uncaptured[0].raised[0].kind, spec::ExceptionKind::IndexError);
  // The PR head's reentrant forward reserves the bit (spec §3.4) for a node it never records:
  // the module after it does not own the update.
  const auto reserved = run("autocast on { data; checkpoint reentrant { linear L0 }; linear L1 }; backward");
  EXPECT_EQ(reserved.at(0).backward_updates, 0);
  EXPECT_EQ(run("autocast on { data; checkpoint reentrant { linear L0 }; linear L1 }; backward", Semantics::Upstream)
                .at(0)
                .backward_updates,
            1);
}

// A Linear on data still records its node and claims (its weight requires grad), and its
// output requires grad: a reentrant checkpoint after it records its node. A non-reentrant
// checkpoint on data is as on any input.
TEST(DataInputs, ALinearOrANonReentrantCheckpointOnDataIsAsOnAnyInput) {
  for (Semantics s : spec::kAllSemantics) {
    SCOPED_TRACE(spec::name(s));
    const auto linear = run("autocast on { data; linear L0; linear L1 }; backward", s);
    EXPECT_EQ(linear.at(0).backward_updates, 1);
    const auto nonreentrant = run("autocast on { data; checkpoint nonreentrant { linear L0 } }; backward", s);
    const auto reference = run("autocast on { checkpoint nonreentrant { linear L0 } }; backward", s);
    EXPECT_EQ(nonreentrant.at(0).forward_updates, reference.at(0).forward_updates);
    EXPECT_EQ(nonreentrant[0].backward_updates, reference[0].backward_updates);
    CheckpointLog log;
    run("autocast on { data; linear L0; checkpoint reentrant { linear L1 } }; backward", s, &log);
    EXPECT_EQ(log.log, (std::vector<std::string>{"fwd0", "rc0", "drop0"}));
  }
}

// `data` drops the graph as a try that caught drops what it recorded; a backward right after it
// is an empty pass.
TEST(DataInputs, DataDropsTheGraphRecordedSoFar) {
  ExtentLog log;
  const auto steps = run("autocast on { linear L0; data; linear L1 }; backward", Semantics::Upstream, &log);
  EXPECT_EQ(log.log, (std::vector<std::string>{"discard0"}));
  EXPECT_EQ(steps.at(0).backward_updates, 0);  // L0 owned the update, as under a try that caught
  const auto empty = run("autocast on { linear L0 }; data; backward", Semantics::Upstream);
  EXPECT_TRUE(empty.at(0).raised.empty());
  EXPECT_EQ(empty[0].backward_updates, 0);
  // A try around it, catching, drops what the new graph recorded too.
  ExtentLog caught;
  run("autocast on { linear L0; try { data; linear L1; raise always } }; backward", Semantics::Pr3213, &caught);
  EXPECT_EQ(caught.log, (std::vector<std::string>{"discard0", "discard1"}));
}

// After a no_grad block, or a try that caught, the chain resumes from what a close inside the
// block restarted it from (data: an input without grad; backward: a leaf with grad), else from
// its value before the block; each step starts from an input that requires grad.
TEST(DataInputs, BlocksResumeTheChainFromTheLastCloseInsideThem) {
  struct Case {
    const char* text;
    bool node;  // the reentrant checkpoint at the end records its node
  };
  for (const Case& c : {Case{"no_grad { data }", false}, Case{"try { data; raise always }", false},
                        Case{"data; no_grad { linear L0 }", false}, Case{"data; try { linear L0 }", true},
                        Case{"data; try { linear L0; raise always }", false},
                        Case{"data; try { backward; raise always }", true}, Case{"data; no_grad { backward }", true},
                        Case{"try { no_grad { data }; backward retain; raise always }", false},
                        Case{"data; checkpoint nonreentrant { }", false},
                        Case{"data; checkpoint nonreentrant { linear L0 }", true}, Case{"data; step", true}}) {
    interpreter::Interpreter interpreter(Semantics::Upstream, nullptr);
    for (const spec::Statement& statement : spec::parse_scenario(c.text).statements) interpreter.feed(statement);
    EXPECT_EQ(interpreter.chain_requires_grad(), c.node) << c.text;
    // Under upstream the checkpoint enters its ARF (a FIFO entry) iff its input requires grad.
    const std::string text = c.text;
    EXPECT_EQ(fifo_after(text + "; checkpoint reentrant { }", Semantics::Upstream),
              fifo_after(text, Semantics::Upstream) + (c.node ? 1u : 0u))
        << c.text;
  }
}

// A recompute runs on the input its checkpoint was called with: the frame called on data
// recomputes its inner reentrant checkpoint on an input without grad again, which under
// upstream leaves no FIFO entry (the uncaptured recompute after the backward finds none).
TEST(DataInputs, ARecomputeRunsOnTheInputOfItsCall) {
  const std::string forward = "autocast on { checkpoint nonreentrant { checkpoint reentrant { linear L0 }; linear L1 } }";
  const auto on_data = run("data; " + forward + "; backward; recompute_uncaptured", Semantics::Upstream);
  ASSERT_EQ(on_data.at(0).raised.size(), 1u);
  EXPECT_EQ(on_data[0].raised[0].kind, spec::ExceptionKind::IndexError);
  EXPECT_EQ(on_data[0].forward_updates, 2);
  EXPECT_EQ(on_data[0].backward_updates, 1);
  EXPECT_TRUE(run(forward + "; backward; recompute_uncaptured", Semantics::Upstream).at(0).raised.empty());
}

}  // namespace
}  // namespace fp8sm
