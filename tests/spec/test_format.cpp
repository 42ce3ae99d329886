// Tests of spec/format.hpp: each formatter against text known independently of the code that
// writes it (the scenario language as docs/scenarios.md writes it, the invariants' ids of spec
// §5, the semantics' names of the command line, the events' fields as events.hpp declares them).
#include <gtest/gtest.h>

#include <string>

#include "spec/format.hpp"
#include "spec/scenario_parser.hpp"

namespace fp8sm::spec {
namespace {

// A program in the canonical multi-line form (two-space indent, one statement a line), written
// by hand, using every kind of statement.
constexpr const char* kCanonical =
    "autocast on {\n"
    "  checkpoint reentrant {\n"
    "    linear L0\n"
    "    raise recompute\n"
    "  }\n"
    "  checkpoint nonreentrant {\n"
    "    linear L1\n"
    "    raise original\n"
    "  }\n"
    "}\n"
    "autocast off {\n"
    "  no_grad {\n"
    "    recompute_uncaptured\n"
    "  }\n"
    "}\n"
    "try {\n"
    "  raise always\n"
    "}\n"
    "save A\n"
    "backward A retain\n"
    "backward A\n"
    "backward\n"
    "step\n";

TEST(Format, ProgramIsItsCanonicalScenarioText) {
  const Program program = parse_scenario(kCanonical);
  EXPECT_EQ(fmt::format("{}", program), kCanonical);
}

// The one-line form of docs/scenarios.md's example.
TEST(Format, ProgramOneLineIsTheDocsOneLineForm) {
  const char* one_line = "autocast on { checkpoint reentrant { linear L0; linear L1; linear L2 } }; backward";
  const Program program = parse_scenario(one_line);
  EXPECT_EQ(fmt::format("{:l}", program), one_line);
  EXPECT_THROW((void)fmt::format(fmt::runtime("{:x}"), program), fmt::format_error);
}

// A statement alone does not know its program's names: it shows the index after '#'.
TEST(Format, StatementShowsIndicesForNames) {
  EXPECT_EQ(fmt::format("{}", make_statement(Op::Linear, 3)), "linear #3");
  EXPECT_EQ(fmt::format("{}", make_statement(Op::Save, 1)), "save #1");
  EXPECT_EQ(fmt::format("{}", make_statement(Op::Backward, 1, true)), "backward #1 retain");
  EXPECT_EQ(fmt::format("{}", make_statement(Op::Backward, kCurrentGraph)), "backward");
  EXPECT_EQ(fmt::format("{}", make_statement(Op::Backward, kCurrentGraph, true)), "backward retain");
  EXPECT_EQ(fmt::format("{}", make_statement(Op::CheckpointNonReentrant)), "checkpoint nonreentrant {");
  EXPECT_EQ(fmt::format("{}", make_statement(Op::Close)), "}");
  EXPECT_EQ(fmt::format("{}", make_statement(Op::RaiseAlways)), "raise always");
  EXPECT_EQ(fmt::format("{}", make_statement(Op::Step)), "step");
  EXPECT_EQ(fmt::format("{}", make_statement(Op::Data)), "data");
}

// With its program, a statement prints as that program's scenario text does, names and all.
TEST(Format, StatementWithItsProgramUsesTheNames) {
  const Program program = parse_scenario("save tape1\nlinear my_layer\nbackward tape1 retain\n");
  EXPECT_EQ(print_statement(program.statements[0], &program), "save tape1");
  EXPECT_EQ(print_statement(program.statements[1], &program), "linear my_layer");
  EXPECT_EQ(print_statement(program.statements[2], &program), "backward tape1 retain");
}

TEST(Format, InvariantIsItsId) {
  EXPECT_EQ(fmt::format("{}", Invariant::I1), "I1");
  EXPECT_EQ(fmt::format("{}", Invariant::I4), "I4");
  EXPECT_EQ(fmt::format("{}", Invariant::I9), "I9");
  EXPECT_EQ(fmt::format("[{:>3}]", Invariant::I2), "[ I2]");  // a string's format spec
}

TEST(Format, InvariantSetListsIdsInOrderOrNone) {
  InvariantSet set;
  EXPECT_EQ(fmt::format("{}", set), "none");
  set.add(Invariant::I8);
  set.add(Invariant::I1);
  set.add(Invariant::I3);
  EXPECT_EQ(fmt::format("{}", set), "I1 I3 I8");
}

TEST(Format, SemanticsIsItsCommandLineName) {
  EXPECT_EQ(fmt::format("{}", Semantics::Upstream), "upstream");
  EXPECT_EQ(fmt::format("{}", Semantics::Pr3213), "pr3213");
  EXPECT_EQ(fmt::format("{}", Semantics::Fp8sm), "fp8sm");
}

TEST(Format, ExceptionKindIsItsPythonName) {
  EXPECT_EQ(fmt::format("{}", ExceptionKind::KeyError), "KeyError");
  EXPECT_EQ(fmt::format("{}", ExceptionKind::UserError), "UserError");
}

// Every event: its type's name and its fields in declaration order; none when it has none.
TEST(Format, EventsNameTheirTypeAndFields) {
  EXPECT_EQ(fmt::format("{}", AutocastEnter{true, false}), "AutocastEnter{enabled=true, recompute_internal=false}");
  EXPECT_EQ(fmt::format("{}", AutocastExit{}), "AutocastExit");
  EXPECT_EQ(fmt::format("{}", GradPush{false, true}), "GradPush{enabled=false, internal=true}");
  EXPECT_EQ(fmt::format("{}", GradPop{}), "GradPop");
  EXPECT_EQ(fmt::format("{}", CheckpointForwardEnter{7, true}), "CheckpointForwardEnter{capture=7, reentrant=true}");
  EXPECT_EQ(fmt::format("{}", CheckpointForwardExit{true}), "CheckpointForwardExit{exceptional=true}");
  EXPECT_EQ(fmt::format("{}", RecomputeEnter{4}), "RecomputeEnter{capture=4}");
  EXPECT_EQ(fmt::format("{}", RecomputeExit{}), "RecomputeExit");
  EXPECT_EQ(fmt::format("{}", ModulePrepare{2}), "ModulePrepare{module=2}");
  EXPECT_EQ(fmt::format("{}", ModuleClaim{0}), "ModuleClaim{module=0}");
  EXPECT_EQ(fmt::format("{}", ModuleEndForward{5}), "ModuleEndForward{module=5}");
  EXPECT_EQ(fmt::format("{}", ModuleBackwardBegin{1, true}), "ModuleBackwardBegin{module=1, ran_before=true}");
  EXPECT_EQ(fmt::format("{}", SavedTensorUnpack{false, true}), "SavedTensorUnpack{reached=false, taken=true}");
  EXPECT_EQ(fmt::format("{}", ModuleBackward{3, true, false}), "ModuleBackward{module=3, owner=true, fp8=false}");
  EXPECT_EQ(fmt::format("{}", BackwardPassBegin{}), "BackwardPassBegin");
  EXPECT_EQ(fmt::format("{}", BackwardPassEnd{false}), "BackwardPassEnd{completed=false}");
  EXPECT_EQ(fmt::format("{}", CheckpointReleased{9}), "CheckpointReleased{capture=9}");
}

TEST(Format, AnyEventIsTheEventItHolds) {
  EXPECT_EQ(fmt::format("{}", AnyEvent{ModuleClaim{1}}), "ModuleClaim{module=1}");
  EXPECT_EQ(fmt::format("{}", AnyEvent{BackwardPassBegin{}}), "BackwardPassBegin");
}

}  // namespace
}  // namespace fp8sm::spec
