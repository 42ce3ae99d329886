// Tests of the scenario language front end: parser, printer and their round trip.
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "spec/scenario.hpp"
#include "spec/scenario_parser.hpp"

namespace fp8sm::spec {
namespace {

// The example of shared/spec/scenario-language.md, in both of its forms.
constexpr std::string_view kExampleMultiLine =
    "# reentrant checkpoint of three layers: one training step\n"
    "autocast on {\n"
    "  checkpoint reentrant {\n"
    "    linear L0\n"
    "    linear L1\n"
    "    linear L2\n"
    "  }\n"
    "}\n"
    "backward\n";

constexpr std::string_view kExampleOneLine =
    "autocast on { checkpoint reentrant { linear L0; linear L1; linear L2 } }; backward";

std::vector<Op> ops_of(const Program& program) {
  std::vector<Op> ops;
  for (const Statement& statement : program.statements) ops.push_back(statement.op);
  return ops;
}

// Programs are equal when they would run the same: positions are where they were written,
// not what they mean, so they are left out.
::testing::AssertionResult SameProgram(const Program& a, const Program& b) {
  if (a.module_names != b.module_names) return ::testing::AssertionFailure() << "module names differ";
  if (a.tape_names != b.tape_names) return ::testing::AssertionFailure() << "tape names differ";
  if (a.statements.size() != b.statements.size()) {
    return ::testing::AssertionFailure() << "statement counts differ: " << a.statements.size()
                                         << " vs " << b.statements.size();
  }
  for (std::size_t i = 0; i < a.statements.size(); ++i) {
    const Statement& x = a.statements[i];
    const Statement& y = b.statements[i];
    if (x.op != y.op || x.name != y.name || x.retain != y.retain) {
      return ::testing::AssertionFailure() << "statement " << i << " differs";
    }
  }
  return ::testing::AssertionSuccess();
}

void ExpectPos(const Statement& statement, int line, int column) {
  EXPECT_EQ(statement.pos.line, line);
  EXPECT_EQ(statement.pos.column, column);
}

// Parses `text`, expecting a ParseError at line:column whose message contains `message_part`.
void ExpectError(std::string_view text, int line, int column, std::string_view message_part) {
  SCOPED_TRACE(std::string("scenario: ") + std::string(text));
  try {
    parse_scenario(text, "test.scn");
    ADD_FAILURE() << "parsed without error";
  } catch (const ParseError& error) {
    EXPECT_EQ(error.file(), "test.scn");
    EXPECT_EQ(error.pos().line, line) << error.what();
    EXPECT_EQ(error.pos().column, column) << error.what();
    EXPECT_NE(error.message().find(message_part), std::string::npos) << error.what();
  }
}

// --- opens_block / is_checkpoint ---------------------------------------------------------------

TEST(ScenarioOps, OpensBlockAndIsCheckpoint) {
  for (Op op : {Op::AutocastOn, Op::AutocastOff, Op::CheckpointReentrant,
                Op::CheckpointNonReentrant, Op::NoGrad, Op::Try}) {
    EXPECT_TRUE(opens_block(op));
  }
  for (Op op : {Op::Close, Op::Linear, Op::RaiseAlways, Op::RaiseOriginal, Op::RaiseRecompute,
                Op::RecomputeUncaptured, Op::Save, Op::Backward, Op::Step, Op::Data}) {
    EXPECT_FALSE(opens_block(op));
    EXPECT_FALSE(is_checkpoint(op));
  }
  EXPECT_TRUE(is_checkpoint(Op::CheckpointReentrant));
  EXPECT_TRUE(is_checkpoint(Op::CheckpointNonReentrant));
  EXPECT_FALSE(is_checkpoint(Op::AutocastOn));
  EXPECT_FALSE(is_checkpoint(Op::NoGrad));
}

// --- the language doc's example ----------------------------------------------------------------

TEST(ScenarioParser, ExampleBothFormsGiveTheSameProgram) {
  const Program multi = parse_scenario(kExampleMultiLine);
  const Program one = parse_scenario(kExampleOneLine);
  EXPECT_TRUE(SameProgram(multi, one));
  EXPECT_EQ(ops_of(multi),
            (std::vector<Op>{Op::AutocastOn, Op::CheckpointReentrant, Op::Linear, Op::Linear,
                             Op::Linear, Op::Close, Op::Close, Op::Backward}));
  EXPECT_EQ(multi.module_names, (std::vector<std::string>{"L0", "L1", "L2"}));
  EXPECT_TRUE(multi.tape_names.empty());
  EXPECT_EQ(multi.statements[2].name, 0);
  EXPECT_EQ(multi.statements[3].name, 1);
  EXPECT_EQ(multi.statements[4].name, 2);
  EXPECT_EQ(multi.statements[7].name, kCurrentGraph);
  EXPECT_FALSE(multi.statements[7].retain);
}

TEST(ScenarioParser, PositionsOfMultiLineExample) {
  const Program program = parse_scenario(kExampleMultiLine);
  ASSERT_EQ(program.statements.size(), 8u);
  ExpectPos(program.statements[0], 2, 1);  // autocast
  ExpectPos(program.statements[1], 3, 3);  // checkpoint
  ExpectPos(program.statements[2], 4, 5);  // linear L0
  ExpectPos(program.statements[3], 5, 5);
  ExpectPos(program.statements[4], 6, 5);
  ExpectPos(program.statements[5], 7, 3);  // '}' of the checkpoint
  ExpectPos(program.statements[6], 8, 1);  // '}' of the autocast
  ExpectPos(program.statements[7], 9, 1);  // backward
}

TEST(ScenarioParser, PositionsOfOneLineExample) {
  const Program program = parse_scenario(kExampleOneLine);
  ASSERT_EQ(program.statements.size(), 8u);
  ExpectPos(program.statements[0], 1, 1);
  ExpectPos(program.statements[1], 1, 15);
  ExpectPos(program.statements[2], 1, 38);
  ExpectPos(program.statements[3], 1, 49);
  ExpectPos(program.statements[4], 1, 60);
  ExpectPos(program.statements[5], 1, 70);
  ExpectPos(program.statements[6], 1, 72);
  ExpectPos(program.statements[7], 1, 75);
}

TEST(ScenarioPrinter, PrintsTheExampleAsInTheDoc) {
  const Program program = parse_scenario(kExampleOneLine);
  // The canonical form is the doc's multi-line example without its comment line.
  const std::string_view without_comment =
      kExampleMultiLine.substr(kExampleMultiLine.find('\n') + 1);
  EXPECT_EQ(print_scenario(program), without_comment);
  EXPECT_EQ(print_scenario_one_line(program), kExampleOneLine);
}

// --- every statement kind ----------------------------------------------------------------------

struct StatementCase {
  const char* text;
  Op op;
  std::uint16_t name;
  bool retain;
};

TEST(ScenarioParser, EveryStatementKind) {
  // The statement under test is the last one of `text`, or the opening one of a block.
  const StatementCase cases[] = {
      {"autocast on {}", Op::AutocastOn, 0, false},
      {"autocast off {}", Op::AutocastOff, 0, false},
      {"checkpoint reentrant {}", Op::CheckpointReentrant, 0, false},
      {"checkpoint nonreentrant {}", Op::CheckpointNonReentrant, 0, false},
      {"no_grad {}", Op::NoGrad, 0, false},
      {"try {}", Op::Try, 0, false},
      {"linear L0", Op::Linear, 0, false},
      {"linear A; linear B", Op::Linear, 1, false},
      {"raise always", Op::RaiseAlways, 0, false},
      {"raise original", Op::RaiseOriginal, 0, false},
      {"raise recompute", Op::RaiseRecompute, 0, false},
      {"recompute_uncaptured", Op::RecomputeUncaptured, 0, false},
      {"save T", Op::Save, 0, false},
      {"save T; save U", Op::Save, 1, false},
      {"backward", Op::Backward, kCurrentGraph, false},
      {"backward retain", Op::Backward, kCurrentGraph, true},
      {"save T; save U; backward U", Op::Backward, 1, false},
      {"save T; backward T retain", Op::Backward, 0, true},
      {"step", Op::Step, 0, false},
      {"data", Op::Data, 0, false},
  };
  for (const StatementCase& c : cases) {
    SCOPED_TRACE(c.text);
    const Program program = parse_scenario(c.text);
    ASSERT_FALSE(program.statements.empty());
    const bool block = opens_block(c.op);
    const Statement& statement = block ? program.statements.front() : program.statements.back();
    EXPECT_EQ(statement.op, c.op);
    EXPECT_EQ(statement.retain, c.retain);
    if (block) {
      ASSERT_EQ(program.statements.size(), 2u);
      EXPECT_EQ(program.statements[1].op, Op::Close);
    } else {
      EXPECT_EQ(statement.name, c.name);
    }
  }
}

TEST(ScenarioParser, NamesAreInternedInOrderOfFirstAppearance) {
  const Program program = parse_scenario(
      "linear B; linear A; linear B; save y; linear C\n"
      "save x; backward y; save y; backward x retain; linear A");
  EXPECT_EQ(program.module_names, (std::vector<std::string>{"B", "A", "C"}));
  EXPECT_EQ(program.tape_names, (std::vector<std::string>{"y", "x"}));
  const std::vector<std::uint16_t> names = {0, 1, 0, 0, 2, 1, 0, 0, 1, 1};
  ASSERT_EQ(program.statements.size(), names.size());
  for (std::size_t i = 0; i < names.size(); ++i) EXPECT_EQ(program.statements[i].name, names[i]);
}

TEST(ScenarioParser, ModuleAndTapeNamesAreSeparate) {
  const Program program = parse_scenario("linear X; save X; backward X");
  EXPECT_EQ(program.module_names, (std::vector<std::string>{"X"}));
  EXPECT_EQ(program.tape_names, (std::vector<std::string>{"X"}));
}

TEST(ScenarioParser, NamesMayContainKeywordsAndBeLong) {
  const std::string long_name(500, 'w');
  const Program program =
      parse_scenario("linear linear_1; linear stepper; linear _9; linear " + long_name);
  EXPECT_EQ(program.module_names,
            (std::vector<std::string>{"linear_1", "stepper", "_9", long_name}));
}

TEST(ScenarioParser, EmptyProgramsAndSeparators) {
  EXPECT_TRUE(parse_scenario("").statements.empty());
  EXPECT_TRUE(parse_scenario("\n\n;;  ; # only a comment\n\t\n").statements.empty());

  const Program program = parse_scenario(
      ";;\n"
      "\n"
      "  linear A ;; linear B # a comment\n"
      "# a whole-line comment\n"
      "autocast off\n"
      "\n"
      "{ linear C }\r\n"
      "no_grad # brace on the next line\n"
      "{\n"
      "  ;\n"
      "}; step;");
  EXPECT_EQ(ops_of(program), (std::vector<Op>{Op::Linear, Op::Linear, Op::AutocastOff,
                                              Op::Linear, Op::Close, Op::NoGrad, Op::Close,
                                              Op::Step}));
  ExpectPos(program.statements[2], 5, 1);  // the block starts at its header, not its '{'
  ExpectPos(program.statements[3], 7, 3);
  ExpectPos(program.statements[4], 7, 12);
  ExpectPos(program.statements[6], 11, 1);
  ExpectPos(program.statements[7], 11, 4);
}

TEST(ScenarioParser, BackwardMayStandInsideNonCheckpointBlocks) {
  const Program program = parse_scenario(
      "save mb0\n"
      "autocast on { linear L0; no_grad { try { backward mb0 } } }\n"
      "backward; step");
  EXPECT_EQ(program.statements[5].op, Op::Backward);
  EXPECT_EQ(program.statements[5].name, 0);
}

// --- printing and the round trip ---------------------------------------------------------------

// Written in the canonical form, so printing it back must reproduce it exactly.
constexpr std::string_view kVaried =
    "linear embed\n"
    "autocast on {\n"
    "  checkpoint nonreentrant {\n"
    "    linear L0\n"
    "    no_grad {\n"
    "      linear frozen\n"
    "    }\n"
    "    raise recompute\n"
    "  }\n"
    "  try {\n"
    "    raise original\n"
    "    linear L0\n"
    "    recompute_uncaptured\n"
    "  }\n"
    "  save mb0\n"
    "  data\n"
    "  autocast off {\n"
    "    linear head\n"
    "    raise always\n"
    "    backward mb0\n"
    "  }\n"
    "}\n"
    "backward mb0 retain\n"
    "save mb1\n"
    "backward retain\n"
    "backward mb1\n"
    "step\n"
    "checkpoint reentrant {\n"
    "}\n"
    "backward\n"
    "step\n";

TEST(ScenarioPrinter, CanonicalTextPrintsBackUnchanged) {
  EXPECT_EQ(print_scenario(parse_scenario(kVaried)), kVaried);
}

TEST(ScenarioPrinter, RoundTripThroughBothForms) {
  const Program original = parse_scenario(kVaried);
  const std::string multi = print_scenario(original);
  const std::string one = print_scenario_one_line(original);
  EXPECT_EQ(one.find('\n'), std::string::npos);
  EXPECT_TRUE(SameProgram(parse_scenario(multi), original));
  EXPECT_TRUE(SameProgram(parse_scenario(one), original));
  EXPECT_EQ(print_scenario_one_line(parse_scenario(one)), one);
}

TEST(ScenarioPrinter, OneLineForm) {
  const Program program = parse_scenario(
      "save T\ntry {\n}\nno_grad { linear A }\nbackward T retain\nstep");
  EXPECT_EQ(print_scenario_one_line(program),
            "save T; try { }; no_grad { linear A }; backward T retain; step");
}

TEST(ScenarioPrinter, ProgramBuiltInCode) {
  Program program;
  program.module_names = {"M"};
  program.statements = {{Op::Try, 0, false, {}}, {Op::Linear, 0, false, {}},
                        {Op::Close, 0, false, {}}, {Op::Backward, kCurrentGraph, true, {}}};
  EXPECT_EQ(print_scenario(program), "try {\n  linear M\n}\nbackward retain\n");
  program.statements.push_back({Op::Linear, 7, false, {}});
  EXPECT_THROW(print_scenario(program), std::invalid_argument);
}

// --- errors --------------------------------------------------------------------------------------

TEST(ScenarioErrors, WhatIsOneLineWithFileAndPosition) {
  try {
    parse_scenario("linear L0\n  lineer L1\n", "scenarios/x.scn");
    FAIL() << "parsed without error";
  } catch (const ParseError& error) {
    EXPECT_EQ(std::string(error.what()),
              "scenarios/x.scn:2:3: error: unknown statement 'lineer'; expected one of "
              "autocast, checkpoint, no_grad, try, linear, raise, recompute_uncaptured, save, "
              "backward, step, data");
  }
}

TEST(ScenarioErrors, WhatStaysOneLineForAFileNameWithALineBreak) {
  const ParseError error("a\nb", SourcePos{1, 2}, "m");
  EXPECT_EQ(std::string(error.what()), "a b:1:2: error: m");
}

TEST(ScenarioErrors, UnclosedBlock) {
  // Reported at the end of the file, naming the innermost block left open.
  ExpectError("linear L0\nbackward\n  checkpoint reentrant {\n    linear L1\n", 5, 1,
              "unclosed block: 'checkpoint' opened at 3:3 has no matching '}'");
  ExpectError("autocast on {\n  linear L0 }\n}", 3, 1,
              "unexpected '}': no block is open");
  ExpectError("autocast on { try { linear L0 }", 1, 32, "'autocast' opened at 1:1");
}

TEST(ScenarioErrors, UnknownStatement) {
  ExpectError("linear L0\n  lineer L1", 2, 3, "unknown statement 'lineer'; expected one of");
  ExpectError("retain", 1, 1, "unknown statement 'retain'");
  ExpectError("{ linear L0 }", 1, 1, "unexpected '{'");
}

TEST(ScenarioErrors, BackwardOfUnknownTape) {
  ExpectError("save T\nbackward U", 2, 10,
              "backward of unknown tape 'U': no 'save U' before this line");
  // The save has to come before the backward.
  ExpectError("linear L0\nbackward T\nsave T", 2, 10, "backward of unknown tape 'T'");
}

TEST(ScenarioErrors, KeywordAsName) {
  ExpectError("linear step", 1, 8, "found keyword 'step'");
  ExpectError("save  try", 1, 7, "expected a tape name after 'save', found keyword 'try'");
  ExpectError("backward save", 1, 10, "found keyword 'save'");
  ExpectError("linear data", 1, 8, "found keyword 'data'");
}

TEST(ScenarioErrors, StrayClosingBrace) {
  ExpectError("linear L0\n}", 2, 1, "unexpected '}': no block is open");
  ExpectError("no_grad { linear L0 } }", 1, 23, "unexpected '}': no block is open");
}

TEST(ScenarioErrors, SaveInsideCheckpoint) {
  ExpectError("checkpoint nonreentrant {\n  no_grad {\n    save T\n  }\n}", 3, 5,
              "'save' is not allowed inside a checkpoint block");
}

TEST(ScenarioErrors, BackwardInsideCheckpoint) {
  ExpectError("autocast on { checkpoint reentrant { linear L0; backward } }", 1, 49,
              "'backward' is not allowed inside a checkpoint block (its recompute would run "
              "the backward again)");
}

// `data` drops the graph recorded so far: allowed where `save` is (no_grad, try, autocast), not
// in a checkpoint, however deep.
TEST(ScenarioErrors, DataInsideCheckpoint) {
  ExpectError("autocast on {\n  checkpoint nonreentrant {\n    try { data }\n  }\n}", 3, 11,
              "'data' is not allowed inside a checkpoint block (its recompute would drop the graph again)");
  EXPECT_NO_THROW(parse_scenario("autocast on { no_grad { try { data } } }; data; backward"));
}

TEST(ScenarioErrors, StepInsideBlock) {
  ExpectError("try {\n  step\n}", 2, 3,
              "'step' is not allowed inside a block: every block must be closed at the end of a "
              "step");
  ExpectError("autocast off { linear L0; step }", 1, 27, "'step' is not allowed inside a block");
}

TEST(ScenarioErrors, MissingNames) {
  ExpectError("linear\nlinear L0", 1, 7,
              "expected a module name after 'linear', found end of line");
  ExpectError("linear # the name is missing\n", 1, 8, "expected a module name after 'linear'");
  ExpectError("linear", 1, 7, "found end of file");
  ExpectError("save; backward", 1, 5, "expected a tape name after 'save', found ';'");
  ExpectError("try { linear }", 1, 14, "expected a module name after 'linear', found '}'");
}

TEST(ScenarioErrors, BadAutocastArgument) {
  ExpectError("autocast {\n}", 1, 10, "expected 'on' or 'off' after 'autocast', found '{'");
  ExpectError("autocast maybe {}", 1, 10, "found 'maybe'");
}

TEST(ScenarioErrors, BadCheckpointArgumentOrMissingBrace) {
  ExpectError("checkpoint {}", 1, 12,
              "expected 'reentrant' or 'nonreentrant' after 'checkpoint', found '{'");
  ExpectError("checkpoint reentrant\nlinear L0", 2, 1,
              "expected '{' after 'checkpoint reentrant', found keyword 'linear'");
  ExpectError("autocast on; { }", 1, 12, "expected '{' after 'autocast on', found ';'");
  ExpectError("no_grad", 1, 8, "expected '{' after 'no_grad', found end of file");
}

TEST(ScenarioErrors, BadRaiseArgument) {
  ExpectError("raise sometimes", 1, 7,
              "expected 'always', 'original' or 'recompute' after 'raise', found 'sometimes'");
  ExpectError("raise\nalways", 1, 6, "found end of line");
}

TEST(ScenarioErrors, ExtraWordsAfterAStatement) {
  ExpectError("linear L0 L1", 1, 11, "expected ';' or end of line after 'linear L0', found 'L1'");
  ExpectError("save T; backward T retain again", 1, 27, "after 'backward T retain'");
  ExpectError("try { } linear L0", 1, 9, "after '}', found keyword 'linear'");
  ExpectError("data L0", 1, 6, "expected ';' or end of line after 'data', found 'L0'");
}

TEST(ScenarioErrors, BadCharacter) {
  ExpectError("linear L0 @", 1, 11, "unexpected character '@'");
  ExpectError("linear L-1", 1, 9, "unexpected character '-'");
  ExpectError("linear L\xC3\xA9", 1, 9, "unexpected byte 0xC3");
  ExpectError("\tlinear\x01", 1, 8, "unexpected byte 0x01");
}

TEST(ScenarioErrors, ReportedInSourceOrder) {
  // The unknown statement comes first; the bad character after it must not mask it.
  ExpectError("lineer L0\n@", 1, 1, "unknown statement 'lineer'");
}

}  // namespace
}  // namespace fp8sm::spec
