// I8 (checkpoint transparency) is judged only while the program and the same program without
// its checkpoints can be compared: they part for reasons that are not the FP8 state (spec::
// ReferenceDivergence), and the search and `explorer run` must see the same parting.
#include <gtest/gtest.h>

#include <memory>

#include "explorer/model/model_state.hpp"
#include "scenario_helpers.hpp"

namespace fp8sm {
namespace {

using spec::Invariant;
using spec::Semantics;

// Found by the exhaustive search at depth 7 under fp8sm: the second `save A` is skipped (the
// caught raise before it), so tape A stays freed by the backward before, and the last
// backward meets the freed checkpoint node, which the program without checkpoints does not
// have (an empty body still makes a node). That is a backward of a freed tape: the runs part
// there, and I8 must not compare them. Counted as if the skipped save had run, the tape looked
// fresh and I8 reported a difference of exceptions.
constexpr const char* kSkippedSave =
    "checkpoint reentrant { }; try { save A; backward A; raise always; save A }; backward A";

TEST(Transparency, ASaveAnExceptionSkippedDoesNotRefreshTheTape) {
  for (Semantics s : spec::kAllSemantics) {
    const explorer::ScenarioReport report = test_support::run_text(kSkippedSave, s);
    ASSERT_EQ(report.steps.size(), 1u);
    EXPECT_EQ(report.steps[0].raised.size(), 1u) << spec::name(s);  // the freed graph
    EXPECT_FALSE(report.steps[0].violations.contains(Invariant::I8)) << spec::name(s);
    // The search's state judges the same, statement by statement and at the end.
    explorer::ModelRunner runner(s, {}, true);
    auto state = std::make_unique<explorer::ModelState>();
    runner.initial(*state);
    const spec::Program program = spec::parse_scenario(kSkippedSave);
    for (const spec::Statement& st : program.statements) {
      EXPECT_FALSE(runner.apply(*state, st).contains(Invariant::I8)) << spec::name(s);
    }
    EXPECT_FALSE(runner.end_here(*state).contains(Invariant::I8)) << spec::name(s);
  }
}

// The same program with the save executed compares, and the runs agree: no I8 either, and
// no exception (the tape was saved again, empty in both).
TEST(Transparency, ASaveThatRunsRefreshesTheTape) {
  const explorer::ScenarioReport report =
      test_support::run_text("checkpoint reentrant { }; try { save A; backward A; save A }; backward A", Semantics::Fp8sm);
  ASSERT_EQ(report.steps.size(), 1u);
  EXPECT_TRUE(report.steps[0].raised.empty());
  EXPECT_FALSE(report.steps[0].violations.contains(Invariant::I8));
}

// Found by the exhaustive search at depth 6 with --data-inputs under fp8sm: a reentrant
// checkpoint on data records no node (torch's rule), so its module gets no gradient and makes
// no backward update, where the program without the checkpoint does: 1/0 against 1/1 under
// every semantics. The program parts from its reference at the checkpoint's call (grad on,
// input without grad); one executed with grad off, or skipped, or on an input that requires
// grad does not part it.
TEST(Transparency, AReentrantCheckpointOnDataPartsTheRuns) {
  struct Case {
    const char* text;
    bool parted;
  };
  for (const Case& c : {Case{"autocast on { data; checkpoint reentrant { linear L0 } }; backward", true},
                        Case{"autocast on { data; checkpoint nonreentrant { linear L0 } }; backward", false},
                        Case{"autocast on { data; linear L0; checkpoint reentrant { linear L1 } }; backward", false},
                        Case{"autocast on { data; try { raise always; checkpoint reentrant { linear L0 } } }; backward",
                             false}}) {
    for (Semantics s : spec::kAllSemantics) {
      const explorer::ScenarioReport report = test_support::run_text(c.text, s);
      ASSERT_EQ(report.steps.size(), 1u);
      if (c.parted) {
        EXPECT_EQ(report.steps[0].backward_updates, 0) << c.text << " " << spec::name(s);
        EXPECT_EQ(report.reference.at(0).backward_updates, 1) << c.text << " " << spec::name(s);
      }
      if (s == Semantics::Fp8sm) {
        EXPECT_TRUE(report.steps[0].violations.empty()) << c.text;
      }
      // The search's state parts the runs at the same statement.
      explorer::ModelRunner runner(s, {}, true);
      auto state = std::make_unique<explorer::ModelState>();
      runner.initial(*state);
      for (const spec::Statement& st : spec::parse_scenario(c.text).statements) (void)runner.apply(*state, st);
      EXPECT_EQ(state->facts.diverged, c.parted) << c.text << " " << spec::name(s);
      (void)runner.end_here(*state);
    }
  }
}

}  // namespace
}  // namespace fp8sm
