// Non-reentrant frames as TE's saved-tensor hooks make them (spec §3.5 "Which frame a node
// belongs to, and nesting", "Saved-tensor slots"), checkpoints called inside a recompute, and
// a Linear node's single backward (spec §3.3). Every expectation below is derived by hand from
// the spec's event rules (the derivations are in the comments), not taken from a run.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "interpreter/interpreter.hpp"
#include "scenario_helpers.hpp"

namespace fp8sm {
namespace {

using spec::Invariant;
using spec::Semantics;

// Which checkpoints recompute, in order (captures are numbered in order of creation).
struct RecomputeLog : statemachine::Observer {
  std::vector<statemachine::CaptureId> recomputes;
  void recompute_begin(statemachine::CaptureId c) override { recomputes.push_back(c); }
};

struct Expected {
  int forward;
  int backward;
  std::vector<std::string> raised;  // kinds
};

void expect_step(const explorer::ScenarioReport& report, std::size_t step, const Expected& e, const std::string& what) {
  ASSERT_LT(step, report.steps.size()) << what;
  const spec::StepResult& s = report.steps[step];
  EXPECT_EQ(s.forward_updates, e.forward) << what;
  EXPECT_EQ(s.backward_updates, e.backward) << what;
  std::vector<std::string> kinds;
  for (const auto& r : s.raised) kinds.push_back(spec::name(r.kind));
  EXPECT_EQ(kinds, e.raised) << what;
}

explorer::ScenarioReport run(const std::string& text, Semantics s) { return test_support::run_text(text, s); }

std::vector<statemachine::CaptureId> recomputes(const std::string& text) {
  RecomputeLog log;
  interpreter::Interpreter interpreter(Semantics::Pr3213, &log);
  interpreter.run(spec::parse_scenario(text));
  return log.recomputes;
}

// The hand-derived step 0 of `text` under each semantics, and whether upstream and pr3213
// leave a stash or FIFO entry behind (I4); fp8sm must violate nothing.
struct Derived {
  Expected upstream, pr3213, fp8sm;
  bool upstream_leaves_entries = false;
  bool pr3213_leaves_entries = false;
};

void expect_derived(const std::string& text, const Derived& d) {
  const auto upstream = run(text, Semantics::Upstream);
  expect_step(upstream, 0, d.upstream, "upstream");
  EXPECT_EQ(upstream.steps.at(0).violations.contains(Invariant::I4), d.upstream_leaves_entries) << "upstream";
  const auto pr3213 = run(text, Semantics::Pr3213);
  expect_step(pr3213, 0, d.pr3213, "pr3213");
  EXPECT_EQ(pr3213.steps.at(0).violations.contains(Invariant::I4), d.pr3213_leaves_entries) << "pr3213";
  const auto fp8sm = run(text, Semantics::Fp8sm);
  expect_step(fp8sm, 0, d.fp8sm, "fp8sm");
  EXPECT_TRUE(fp8sm.steps.at(0).violations.empty()) << fp8sm.steps[0].violations.to_string();
}

constexpr const char* kOuterWithoutNodes =
    "autocast on { checkpoint nonreentrant { checkpoint nonreentrant { linear L1 } } }; backward";
constexpr const char* kOuterWithNodes =
    "autocast on { checkpoint nonreentrant { linear L0; checkpoint nonreentrant { linear L1 } } }; backward";

// The outer frame (capture 0) owns no node: only the inner frame (capture 1) recomputes.
// Upstream: the forward pushes F = T twice onto the FIFO (outer, inner) and updates once at the
// autocast exit; L1's unpack recomputes the inner frame, whose autocast at depth 0 resets F and
// updates again: 2/1, with the outer's FIFO entry left over (I4). pr3213: the inner recompute
// installs its own capture and never updates: 1/1.
TEST(NestedFrames, AnOuterFrameWithoutNodesIsNeverRecomputed) {
  EXPECT_EQ(recomputes(kOuterWithoutNodes), (std::vector<statemachine::CaptureId>{1}));
  expect_derived(kOuterWithoutNodes, {{2, 1, {}}, {1, 1, {}}, {1, 1, {}}, true, false});
}

// L1 (inner frame, recorded last) is visited first: the inner frame recomputes alone; then L0
// recomputes the outer frame, whose body runs the inner checkpoint's forward again as an
// ordinary forward (capture 2, never recomputed: its nodes are in the recompute's graph).
// Upstream: FIFO after the forward [T, F] (L0 claimed between the pushes), f = 1; the inner
// recompute pops T, resets F at depth 0, L1' re-arms: f = 2; the outer pops F, resets, L0'
// owns, the nested forward pushes T and stashes L1 again (phase is false there), the recompute
// autocast exits at depth 0: f = 3; b = 1 (L0). FIFO [T] and an L1 stash entry are left (I4).
// pr3213: recomputes install their own captures and never update: 1/1, but the nested forward
// in the outer recompute stashes L1 (region on, phase off), never popped (I4).
TEST(NestedFrames, EachFrameRecomputesAloneAtItsOwnNode) {
  EXPECT_EQ(recomputes(kOuterWithNodes), (std::vector<statemachine::CaptureId>{1, 0}));
  expect_derived(kOuterWithNodes, {{3, 1, {}}, {1, 1, {}}, {1, 1, {}}, true, true});
}

// The inner checkpoint is called under `autocast off`: its frame reads fp8 = false and its
// recompute opens a disabled autocast. Upstream: L1 is not FP8 (no claim, no stash); the inner
// recompute pops T and its disabled autocast makes no update; the outer recompute pops F and
// updates at its autocast exit: 2/1, the nested forward's FIFO push left over (I4). pr3213 1/1
// with nothing left (L1 never stashes).
TEST(NestedFrames, AnInnerFrameRecomputesWithItsOwnFp8) {
  const std::string text =
      "autocast on { checkpoint nonreentrant { linear L0; autocast off { checkpoint nonreentrant { linear L1 } } } }; "
      "backward";
  expect_derived(text, {{2, 1, {}}, {1, 1, {}}, {1, 1, {}}, true, false});
  EXPECT_TRUE(run(text, Semantics::Pr3213).steps.at(0).violations.empty());
}

// A raise inside the inner recompute leaves the backward before L0 is visited: the outer frame
// never recomputes. Upstream: the inner recompute's autocast still updates while unwinding:
// 2/0; L0's stash entry and the FIFO entry F stay (I4). pr3213: 1/0, L0's stash entry stays.
TEST(NestedFrames, ARaiseInTheInnerRecomputeStopsBeforeTheOuterFrame) {
  const std::string text =
      "autocast on { checkpoint nonreentrant { linear L0; checkpoint nonreentrant { linear L1; raise recompute } } }; "
      "backward";
  EXPECT_EQ(recomputes(text), (std::vector<statemachine::CaptureId>{1}));
  expect_derived(text, {{2, 0, {"UserError"}}, {1, 0, {"UserError"}}, {1, 0, {"UserError"}}, true, true});
}

// A reentrant checkpoint inside a non-reentrant frame: its node saves its input through the
// frame's hook. The frame's recompute (capture 0) runs the reentrant forward again (capture 2,
// grad on: a node in the never-backpropagated graph), then the original node's recompute
// (capture 1) runs. Upstream: FIFO [T, T] after the forward (nobody claims under the reentrant
// no-grad forward), f = 1; the frame's recompute pops T, resets, its nested forward pushes T
// and stashes L0 again, its autocast updates: f = 2; the node's recompute pops T, L0' pops the
// oldest stash entry and owns, updates: f = 3, b = 1; FIFO [T] and a stash entry left (I4).
// pr3213: 1/1, the nested forward's stash entry left (I4).
TEST(CheckpointInsideARecompute, ReentrantInsideNonReentrant) {
  const std::string text = "autocast on { checkpoint nonreentrant { checkpoint reentrant { linear L0 } } }; backward";
  EXPECT_EQ(recomputes(text), (std::vector<statemachine::CaptureId>{0, 1}));
  expect_derived(text, {{3, 1, {}}, {1, 1, {}}, {1, 1, {}}, true, true});
}

// A non-reentrant checkpoint inside a reentrant one: under the reentrant no-grad forward its
// frame records nothing (released at once). The reentrant recompute (capture 0) runs its
// forward again with grad on (capture 2): L0' is recorded in the sub-graph, in that frame, and
// the sub-backward recomputes it. Upstream: FIFO [T, T] after the forward, f = 1; the
// reentrant recompute pops T, its nested forward pushes T and stashes L0 again, L0' owns
// (phase off), update f = 2; the frame's recompute pops T, L0'' pops the oldest entry, update
// f = 3; b = 1. pr3213: 1/1, one stash entry left (I4).
TEST(CheckpointInsideARecompute, NonReentrantInsideReentrant) {
  const std::string text = "autocast on { checkpoint reentrant { checkpoint nonreentrant { linear L0 } } }; backward";
  EXPECT_EQ(recomputes(text), (std::vector<statemachine::CaptureId>{0, 2}));
  expect_derived(text, {{3, 1, {}}, {1, 1, {}}, {1, 1, {}}, true, true});
}

// Saved-tensor slots. L5 ran in the forward (slot 0); in the recompute the try catches
// `raise recompute` before it, so slot 0 is never saved again: IndexError at L5's unpack,
// after the recompute and its updates (upstream's recompute autocast updates: 2/0).
TEST(SavedTensorSlots, AShorterRecomputeRaisesIndexErrorAfterItRan) {
  const std::string text = "autocast on { checkpoint nonreentrant { try { raise recompute; linear L5 } } }; backward";
  EXPECT_EQ(recomputes(text), (std::vector<statemachine::CaptureId>{0}));
  expect_step(run(text, Semantics::Upstream), 0, {2, 0, {"IndexError"}}, "upstream");
  expect_step(run(text, Semantics::Pr3213), 0, {1, 0, {"IndexError"}}, "pr3213");
  expect_step(run(text, Semantics::Fp8sm), 0, {1, 0, {"IndexError"}}, "fp8sm");
}

// A recompute that saves more than the forward raises nothing: the forward skipped L0 in the
// try (raise original), the recompute runs it, and L1's slot 0 gets L0's tensor (TE does not
// check). Only L1 was recorded in the forward: one backward update.
TEST(SavedTensorSlots, ALongerRecomputeRaisesNothing) {
  const std::string text =
      "autocast on { checkpoint nonreentrant { try { raise original; linear L0 }; linear L1 } }; backward";
  expect_step(run(text, Semantics::Pr3213), 0, {1, 1, {}}, "pr3213");
  expect_step(run(text, Semantics::Fp8sm), 0, {1, 1, {}}, "fp8sm");
}

// The second backward of a retained graph unpacks a slot the first one took. The reentrant
// node is not a Linear (no AttributeError first): TE's hook left None, torch raises TypeError
// before anything else of that pass (counts as after the first pass: upstream 3/1, pr3213 1/1).
// fp8sm's frame keeps a retained graph's tensors: the second pass recomputes the reentrant
// body and makes its update: 1/2.
TEST(SavedTensorSlots, ASecondUnpackOfASlotRaisesTypeError) {
  const std::string text =
      "autocast on { checkpoint nonreentrant { checkpoint reentrant { linear L0 } } }; backward retain; backward";
  expect_step(run(text, Semantics::Upstream), 0, {3, 1, {"TypeError"}}, "upstream");
  expect_step(run(text, Semantics::Pr3213), 0, {1, 1, {"TypeError"}}, "pr3213");
  const auto fp8sm = run(text, Semantics::Fp8sm);
  expect_step(fp8sm, 0, {1, 2, {}}, "fp8sm");
  EXPECT_TRUE(fp8sm.steps[0].violations.empty()) << fp8sm.steps[0].violations.to_string();
}

// A Linear node's backward runs once in TE (spec §3.3): the second backward of a retained graph
// raises AttributeError at the node's first line, before its update (1/1); through a
// non-reentrant frame it raises the same, before the unpack would raise TypeError. fp8sm's
// Linear runs again: 1/2, with and without the checkpoint alike.
TEST(LinearBackwardOnce, ARetainedGraphsSecondBackwardThroughALinear) {
  for (const std::string body : {"linear L0", "checkpoint nonreentrant { linear L0 }"}) {
    const std::string text = "autocast on { " + body + " }; backward retain; backward";
    expect_step(run(text, Semantics::Pr3213), 0, {1, 1, {"AttributeError"}}, "pr3213 " + body);
    const auto fp8sm = run(text, Semantics::Fp8sm);
    expect_step(fp8sm, 0, {1, 2, {}}, "fp8sm " + body);
    EXPECT_TRUE(fp8sm.steps[0].violations.empty()) << fp8sm.steps[0].violations.to_string();
  }
  // A reentrant checkpoint's recompute records fresh Linear nodes, which run again (TE too).
  const std::string reentrant = "autocast on { checkpoint reentrant { linear L0 } }; backward retain; backward";
  expect_step(run(reentrant, Semantics::Fp8sm), 0, {1, 2, {}}, "fp8sm reentrant");
}

// The language's pinned readings (scenario-language.md): `save` inside `no_grad` closes the
// graph recorded before the block; each step's input requires grad, so a reentrant checkpoint
// that opens the step records its node (seed row 4: 2/1 upstream).
TEST(LanguageReadings, SaveInsideNoGradAndAStepOpeningCheckpoint) {
  expect_step(run("autocast on { linear L0; no_grad { save A } }; backward A", Semantics::Pr3213), 0, {1, 1, {}},
              "save in no_grad");
  expect_step(run("autocast on { checkpoint reentrant { linear L0 } }; backward", Semantics::Upstream), 0, {2, 1, {}},
              "reentrant first");
}

}  // namespace
}  // namespace fp8sm
