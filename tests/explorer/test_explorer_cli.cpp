// The explorer program as a user runs it: output of `explorer run`, and a one-line error with
// a location and exit status 2 for every kind of bad input.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "run_command.hpp"
#include "spec/scenario_parser.hpp"
#include "temporary_directory.hpp"

namespace {

using Result = fp8sm::test_support::CommandResult;

// stdout and stderr together.
Result explorer(const std::string& args) {
  return fp8sm::test_support::run_command(std::string(FP8SM_EXPLORER) + " " + args + " 2>&1");
}

using fp8sm::test_support::TemporaryDirectory;

// The file `name` in `directory`, holding `text`; its path.
std::string write_file(const TemporaryDirectory& directory, const std::string& name, const std::string& text) {
  const std::string path = directory.file(name);
  std::ofstream(path) << text;
  return path;
}

// The one JSON document a --json run printed (docs/json.md; test_json_documents checks each
// against its schema).
nlohmann::json document(const Result& r) { return nlohmann::json::parse(r.out); }

int lines(const std::string& text) {
  int n = 0;
  for (char c : text) n += c == '\n';
  return n;
}

// `explorer random`: the corpus of the TE conformance check must be the same bytes for the same
// arguments, parse, and reach every statement of the language.
TEST(ExplorerRandom, SameBytesForTheSameArgumentsEveryProgramParsesAndEveryStatementAppears) {
  const Result a = explorer("random --seed 7 --count 300");
  const Result b = explorer("random --count 300 --seed 7");
  ASSERT_EQ(a.status, 0) << a.out;
  EXPECT_EQ(a.out, b.out);
  EXPECT_NE(a.out, explorer("random --seed 8 --count 300").out);
  // A program regenerates alone: the first of a stream is the stream of one.
  const std::string first = explorer("random --seed 7 --count 1").out;
  EXPECT_EQ(a.out.compare(0, first.size(), first), 0);

  std::vector<std::string> programs;
  std::size_t at = 0;
  while ((at = a.out.find("# program ", at)) != std::string::npos) {
    const std::size_t next = a.out.find("# program ", at + 1);
    programs.push_back(a.out.substr(at, next == std::string::npos ? std::string::npos : next - at));
    at = next;
  }
  ASSERT_EQ(programs.size(), 300u);
  bool nested_mixed = false;
  for (const std::string& text : programs) {
    const fp8sm::spec::Program program = fp8sm::spec::parse_scenario(text);  // throws if not
    std::vector<fp8sm::spec::Op> open;
    for (const fp8sm::spec::Statement& s : program.statements) {
      if (fp8sm::spec::is_checkpoint(s.op)) {
        for (fp8sm::spec::Op o : open) nested_mixed = nested_mixed || (fp8sm::spec::is_checkpoint(o) && o != s.op);
      }
      if (fp8sm::spec::opens_block(s.op)) open.push_back(s.op);
      if (s.op == fp8sm::spec::Op::Close) open.pop_back();
    }
  }
  EXPECT_TRUE(nested_mixed) << "no checkpoint of one kind inside one of the other";
  for (const char* statement :
       {"autocast on {", "autocast off {", "checkpoint reentrant {", "checkpoint nonreentrant {", "no_grad {", "try {",
        "linear L2", "raise always", "raise original", "raise recompute", "recompute_uncaptured", "save A", "save B",
        "backward A\n", "backward B retain", "backward retain", "backward\n", "step\n", "data\n"}) {
    EXPECT_NE(a.out.find(statement), std::string::npos) << statement;
  }
}

TEST(ExplorerRun, SeedRowJsonMatchesTheLanguageDocument) {
  const Result r = explorer("run reentrant-single-3-layers --semantics upstream --json");
  EXPECT_EQ(r.status, 1);  // violations found
  EXPECT_EQ(lines(r.out), 1);
  const nlohmann::json d = document(r);
  EXPECT_EQ(d["format"], "fp8sm-run/1");
  EXPECT_EQ(d["semantics"], "upstream");
  ASSERT_EQ(d["steps"].size(), 1u);
  EXPECT_EQ(d["steps"][0]["forward_updates"], 2);
  EXPECT_EQ(d["steps"][0]["backward_updates"], 3);
  EXPECT_EQ(d["steps"][0]["raised"], nlohmann::json::array());
  EXPECT_EQ(d["steps"][0]["violations"], nlohmann::json({"I1", "I2", "I3", "I6", "I8"}));
}

TEST(ExplorerRun, CleanRunExitsZero) {
  const Result r = explorer("run reentrant-single-3-layers --semantics pr3213 --json");
  EXPECT_EQ(r.status, 0);
  const nlohmann::json d = document(r);
  EXPECT_EQ(d["steps"][0]["forward_updates"], 1);
  EXPECT_EQ(d["steps"][0]["backward_updates"], 1);
}

TEST(ExplorerRun, RunsAFileAndReportsRaisedExceptions) {
  const TemporaryDirectory temporary;
  const std::string path = write_file(temporary, "raise.scn", "autocast on { linear L0; raise always }\n");
  const Result r = explorer("run " + path + " --semantics upstream --json");
  EXPECT_EQ(document(r)["steps"][0]["raised"],
            nlohmann::json::parse(R"([{"kind": "UserError", "message": "raised by 'raise always'"}])"))
      << r.out;
}

TEST(ExplorerRun, RowNumberSelectsACatalogueEntry) {
  EXPECT_EQ(explorer("run 5 --json").out, explorer("run reentrant-single-3-layers --json").out);
}

TEST(ExplorerRun, DefaultSemanticsIsFp8sm) {
  EXPECT_EQ(explorer("run 5 --json").out, explorer("run 5 --semantics fp8sm --json").out);
  EXPECT_EQ(document(explorer("run 5 --json"))["semantics"], "fp8sm");
}

TEST(ExplorerDepth, SearchesAndReportsOneJsonObject) {
  const Result clean = explorer("--depth 2 --json");
  EXPECT_EQ(clean.status, 0);
  EXPECT_EQ(lines(clean.out), 1);
  EXPECT_EQ(document(clean)["semantics"], "fp8sm");
  EXPECT_EQ(document(clean)["violations"], nlohmann::json::array());
  const Result found = explorer("--depth 2 --semantics upstream --json");
  EXPECT_EQ(found.status, 1);
  bool i4 = false;
  const nlohmann::json report = document(found);
  for (const auto& v : report["violations"]) i4 = i4 || v["invariant"] == "I4";
  EXPECT_TRUE(i4) << found.out;
}

// --data-inputs adds `data` to the search's alphabet (off by default): the report says so, and
// the shortest I8 counterexample of upstream is no shorter than without it.
TEST(ExplorerDepth, DataInputsAddDataToTheAlphabet) {
  const Result with = explorer("--depth 3 --semantics upstream --data-inputs --json");
  EXPECT_EQ(with.status, 1) << with.out;
  const nlohmann::json report = document(with);
  EXPECT_EQ(report["data_inputs"], true);
  EXPECT_EQ(document(explorer("--depth 3 --semantics upstream --json"))["data_inputs"], false);
  EXPECT_GT(report["distinct_states"].get<std::uint64_t>(),
            document(explorer("--depth 3 --semantics upstream --json"))["distinct_states"].get<std::uint64_t>());
  EXPECT_NE(explorer("--depth 1 --data-inputs").out.find("data inputs, symmetry on"), std::string::npos);
  EXPECT_EQ(explorer("run 5 --data-inputs").status, 2);  // a search option only
}

TEST(ExplorerDepth, MemoryBudgetStopsWithAPartialReport) {
  // 1 MiB holds about 70 000 states at 15 bytes each; depth 5 has 0.8 million. Incomplete, with
  // nothing violated in what it explored: exit status 3.
  const Result r = explorer("--depth 5 --max-memory 1M --json");
  EXPECT_EQ(r.status, 3) << r.out;
  EXPECT_EQ(document(r)["complete"], false) << r.out;
  EXPECT_EQ(document(r)["stopped_by"], "max-memory") << r.out;
  const Result text = explorer("--depth 5 --max-memory 1M");
  EXPECT_NE(text.out.find("stopped at the memory budget (--max-memory)"), std::string::npos) << text.out;
}

// An interrupted search (SIGINT here, which the explorer sends itself once layer 2 is saved)
// is exit status 4, with the report of what it explored: complete to depth 2.
TEST(ExplorerDepth, AnInterruptedSearchIsExitFourWithAPartialReport) {
  const TemporaryDirectory temporary;
  const Result r = fp8sm::test_support::run_command("FP8SM_TEST_FAULT='interrupt manifest-written 2' " +
                                                    std::string(FP8SM_EXPLORER) + " --depth 4 --json --snapshot '" +
                                                    temporary.file("snapshot") + "' 2>/dev/null");
  EXPECT_EQ(r.status, 4) << r.out;
  const nlohmann::json d = document(r);
  EXPECT_EQ(d["complete"], false);
  EXPECT_EQ(d["stopped_by"], "interrupted");
  EXPECT_EQ(d["depth_completed"], 2);
  EXPECT_EQ(d["layers"].size(), 3u);
  EXPECT_EQ(d["distinct_states"], d["layers"][2]["distinct"]);
}

TEST(ExplorerList, ShowsTheWholeCatalogue) {
  const Result r = explorer("list");
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(lines(r.out), 26);
}

// An incomplete search says so in its exit status (3) and its text, never "holding"; a
// violation found before the budget stopped it is still a violation (1).
TEST(ExplorerDepth, AnIncompleteSearchIsNeitherCleanNorHolding) {
  const Result r = explorer("--depth 8 --max-states 10");
  EXPECT_EQ(r.status, 3) << r.out;
  EXPECT_EQ(r.out.find("holding:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("not violated in what was explored (incomplete search)"), std::string::npos) << r.out;
  EXPECT_EQ(explorer("--depth 4 --semantics upstream --max-states 2000").status, 1);
}

// The search's flat states are sized for programs of up to 8 statements over up to 8
// modules: more is refused at once, saying why, not discovered halfway through a search.
TEST(ExplorerDepth, DepthsAndModulesPastTheFlatStatesCapacitiesAreRefused) {
  const Result deep = explorer("--depth 9");
  EXPECT_EQ(deep.status, 2) << deep.out;
  EXPECT_NE(deep.out.find("--depth: must be 0 to 8"), std::string::npos) << deep.out;
  const Result wide = explorer("--depth 2 --modules 9");
  EXPECT_EQ(wide.status, 2) << wide.out;
  EXPECT_NE(wide.out.find("--modules: must be 1 to 8"), std::string::npos) << wide.out;
  EXPECT_EQ(explorer("random --modules 16 --count 1").status, 0);  // programs to run need no flat state
}

// A search to the fixpoint as a user runs it (docs/explorer.md, "Fixpoint"). Within one open
// block and one live node, fp8sm's programs reach finitely many states (tests/explorer/
// test_fixpoint_search.cpp compares them with a plain breadth-first search): the report says
// "fixpoint", exit 0, and its text and JSON agree. Cut short at depth 3, where the third layer
// still adds states (programs of three statements reach states two cannot: the two-statement
// layer is not the last of a fixpoint at depth 12 or so), it is incomplete: exit 3.
TEST(ExplorerFixpoint, SaysFixpointOrNoFixpointInTextAndJson) {
  const std::string bounds = "--until-fixpoint --max-open-blocks 1 --max-live-nodes 1 --modules 1 --check I1,I2,I3,I6,I7";
  const Result text = explorer(bounds);
  EXPECT_EQ(text.status, 0) << text.out;
  EXPECT_NE(text.out.find("bounds: programs hold at most 1 open block and 1 graph node"), std::string::npos) << text.out;
  const std::size_t line = text.out.find("\nfixpoint at depth ");
  ASSERT_NE(line, std::string::npos) << text.out;
  const Result json = explorer(bounds + " --json");
  EXPECT_EQ(json.status, 0);
  const nlohmann::json report = document(json);
  EXPECT_TRUE(report["until_fixpoint"].get<bool>());
  EXPECT_TRUE(report["complete"].get<bool>());
  EXPECT_EQ(report["bounds"]["open_blocks"], 1);
  EXPECT_EQ(report["bounds"]["live_nodes"], 1);
  const int depth = report["fixpoint_depth"].get<int>();
  const std::string states = std::to_string(report["distinct_states"].get<std::uint64_t>());
  EXPECT_EQ(text.out.substr(line + 1, text.out.find('\n', line + 1) - line - 1),
            "fixpoint at depth " + std::to_string(depth) + ": every program within the bounds, of any length, reaches one of these " +
                states + " states");
  // The last layer added nothing, the one at the fixpoint's depth something.
  const auto& layers = report["layers"];
  ASSERT_EQ(layers.size(), static_cast<std::size_t>(depth) + 2);
  EXPECT_EQ(layers[static_cast<std::size_t>(depth) + 1]["frontier"], 0);
  EXPECT_GT(layers[static_cast<std::size_t>(depth)]["frontier"].get<int>(), 0);

  const Result cut = explorer(bounds + " --depth 3 --json");
  EXPECT_EQ(cut.status, 3) << cut.out;
  EXPECT_EQ(document(cut)["stopped_by"], "no-fixpoint");
  EXPECT_TRUE(document(cut)["fixpoint_depth"].is_null());
  const Result cut_text = explorer(bounds + " --depth 3");
  EXPECT_NE(cut_text.out.find("no fixpoint by depth 3: that layer still added"), std::string::npos) << cut_text.out;
}

// With the numerics too (every invariant but I8, docs/explorer.md "What makes the bounded space
// finite"): fp8sm reaches a fixpoint within one open block and one live node and holds them all.
TEST(ExplorerFixpoint, ProvesTheNumericsWithoutI8) {
  const Result r = explorer("--until-fixpoint --max-open-blocks 1 --max-live-nodes 1 --modules 1 "
                            "--check I1,I2,I3,I4,I5,I6,I7,I9");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("every program within the bounds, of any length"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("holding: I1 I2 I3 I4 I5 I6 I7 I9"), std::string::npos) << r.out;
}

// And with I8 too, every invariant (docs/explorer.md, "What makes I8 finite"): the run without
// checkpoints left out once I8 has judged its last step, the step's counts as the runs'
// difference, both runs renamed within a step. fp8sm holds all nine within (1, 1, 1).
TEST(ExplorerFixpoint, ProvesEveryInvariantWithI8) {
  const Result r = explorer("--until-fixpoint --max-open-blocks 1 --max-live-nodes 1 --modules 1");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("every program within the bounds, of any length"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("holding: I1 I2 I3 I4 I5 I6 I7 I8 I9"), std::string::npos) << r.out;
}

// Where there is no fixpoint, the report says what still grows, in text and JSON alike: upstream
// keeps the recompute context of every checkpoint, whose forward state it restores, in its
// checkpoint frames (docs/explorer.md, "Fixpoint"), so within one open block and one node that
// part takes a new value with every further checkpoint. Each part comes with a program that gave
// it one, a whole program `explorer run` takes.
TEST(ExplorerFixpoint, NamesWhatStillGrowsWhereThereIsNone) {
  const std::string args = "--until-fixpoint --max-open-blocks 1 --max-live-nodes 1 --modules 1 --semantics upstream "
                           "--check I1,I2,I3,I6,I7 --depth 6";
  const Result text = explorer(args);
  const Result json = explorer(args + " --json");
  EXPECT_EQ(json.status, 1) << json.out;  // upstream violates I6 within these bounds
  const nlohmann::json report = document(json);
  EXPECT_EQ(report["stopped_by"], "no-fixpoint");
  const nlohmann::json& growing = report["still_growing"];
  ASSERT_TRUE(growing.is_object()) << json.out;
  EXPECT_EQ(growing["depth"], 6);
  const std::string heading =
      "what still grows: the parts of the state that took new values at depth 6 of the same programs (" +
      std::to_string(growing["states"].get<std::uint64_t>()) + " states;";
  EXPECT_NE(text.out.find(heading), std::string::npos) << text.out;
  bool frames = false;
  for (const auto& part : growing["parts"]) {
    const std::string name = part["part"];
    frames = frames || name == "program.machine.checkpoint_frames";
    const std::string line = "    " + name + ", as after: " + part["example"].get<std::string>() + "\n";
    EXPECT_NE(text.out.find(line), std::string::npos) << line << text.out;
    TemporaryDirectory directory;
    const std::string file = directory.file("example.scn");
    std::ofstream(file) << part["example"].get<std::string>() << "\n";
    const Result run = explorer("run " + file + " --semantics upstream");
    EXPECT_NE(run.status, 2) << name << ": " << run.out;  // a program, not a usage error
  }
  EXPECT_TRUE(frames) << json.out;
  // A search that reaches its fixpoint has nothing to name.
  const Result fixpoint =
      explorer("--until-fixpoint --max-open-blocks 1 --max-live-nodes 1 --modules 1 --check I1,I2,I3,I6,I7 --json");
  EXPECT_TRUE(document(fixpoint)["still_growing"].is_null());
}

// pr3213's I2 counterexample (5 statements, the seed discussion's) stays within one open block
// and one node: its search to the fixpoint finds it, exit 1.
TEST(ExplorerFixpoint, FindsTheViolationsOfASemanticsThatHasThem) {
  const Result r = explorer("--until-fixpoint --max-open-blocks 1 --max-live-nodes 1 --modules 1 --semantics pr3213 "
                            "--check I1,I2,I3,I6,I7 --json");
  EXPECT_EQ(r.status, 1) << r.out;
  bool i2 = false;
  const nlohmann::json report = document(r);
  for (const auto& v : report["violations"]) i2 = i2 || v["invariant"] == "I2";
  EXPECT_TRUE(i2) << r.out;
}

// What a search to the fixpoint refuses, before it starts: no bounds (there would be no
// fixpoint), bounds past the flat state's room, a depth past its paths', a snapshot.
TEST(ExplorerFixpoint, RefusesWhatCannotReachOrKeepAFixpoint) {
  const Result unbounded = explorer("--until-fixpoint");
  EXPECT_EQ(unbounded.status, 2);
  EXPECT_NE(unbounded.out.find("--until-fixpoint needs --max-open-blocks K and --max-live-nodes M"), std::string::npos)
      << unbounded.out;
  const Result blocks = explorer("--until-fixpoint --max-open-blocks 17 --max-live-nodes 1");
  EXPECT_EQ(blocks.status, 2);
  EXPECT_NE(blocks.out.find("--max-open-blocks: must be 1 to 16"), std::string::npos) << blocks.out;
  const Result nodes = explorer("--until-fixpoint --max-open-blocks 1 --max-live-nodes 17");
  EXPECT_EQ(nodes.status, 2);
  EXPECT_NE(nodes.out.find("--max-live-nodes: must be 1 to 16"), std::string::npos) << nodes.out;
  const Result deep = explorer("--until-fixpoint --max-open-blocks 1 --max-live-nodes 1 --depth 49");
  EXPECT_EQ(deep.status, 2);
  EXPECT_NE(deep.out.find("--depth: must be 1 to 48"), std::string::npos) << deep.out;
  TemporaryDirectory directory;
  const Result snapshot =
      explorer("--until-fixpoint --max-open-blocks 1 --max-live-nodes 1 --snapshot " + directory.file("snapshot"));
  EXPECT_EQ(snapshot.status, 2);
  EXPECT_NE(snapshot.out.find("a search to the fixpoint takes no snapshot"), std::string::npos) << snapshot.out;
}

// Options stand before or after the command and are honoured there (they used to be dropped
// silently before `run`).
TEST(ExplorerOptions, HonouredBeforeTheCommand) {
  const Result before = explorer("--semantics upstream --json run 5");
  EXPECT_EQ(before.status, 1) << before.out;
  EXPECT_EQ(before.out, explorer("run 5 --semantics upstream --json").out);
  EXPECT_EQ(document(before)["semantics"], "upstream") << before.out;
  EXPECT_EQ(explorer("--semantics pr3213 catalogue").out, explorer("catalogue --semantics pr3213").out);
}

// The search is a command like the others (`explorer search --depth N`); the bare `--depth N`
// is its alias, with the same output, and options may stand before or after either.
TEST(ExplorerSearch, TheSearchCommandAndItsAliasPrintTheSameReport) {
  // The report up to the lines a run measures (time, memory).
  const auto report = [](const Result& r) { return r.out.substr(0, r.out.find("total:")); };
  const Result bare = explorer("--depth 2 --semantics upstream");
  EXPECT_EQ(bare.status, 1) << bare.out;
  ASSERT_NE(bare.out.find("total:"), std::string::npos) << bare.out;
  for (const char* args : {"search --depth 2 --semantics upstream", "--depth 2 search --semantics upstream",
                           "--semantics upstream search --depth 2"}) {
    const Result r = explorer(args);
    EXPECT_EQ(r.status, 1) << args << ": " << r.out;
    EXPECT_EQ(report(r), report(bare)) << args;
  }
}

// A command's --help lists the options it takes, and no other.
TEST(ExplorerSearch, EachCommandsHelpListsItsOptions) {
  const Result search = explorer("search --help");
  EXPECT_EQ(search.status, 0);
  EXPECT_NE(search.out.find("--depth N"), std::string::npos) << search.out;
  EXPECT_NE(search.out.find("--max-memory SIZE"), std::string::npos) << search.out;
  EXPECT_EQ(search.out.find("--seed"), std::string::npos) << search.out;
  const Result random = explorer("random --help");
  EXPECT_NE(random.out.find("--seed S"), std::string::npos) << random.out;
  EXPECT_EQ(random.out.find("--depth"), std::string::npos) << random.out;
  EXPECT_NE(explorer("list --help").out.find("list takes no options"), std::string::npos);
}

// Every number is read in decimal: a leading zero does not make it octal (010 is ten), and
// 0x is no prefix. `random --length 010` is ten choices, not eight.
TEST(ExplorerOptions, NumbersAreDecimal) {
  const Result ten = explorer("random --seed 3 --count 20 --length 10");
  ASSERT_EQ(ten.status, 0) << ten.out;
  EXPECT_EQ(explorer("random --seed 3 --count 20 --length 010").out, ten.out);
  EXPECT_NE(explorer("random --seed 3 --count 20 --length 8").out, ten.out);
  EXPECT_EQ(explorer("random --seed 3 --count 2 --modules 010").out, explorer("random --seed 3 --count 2 --modules 10").out);
  EXPECT_EQ(explorer("--depth 02 --threads 02 --json").out.substr(0, 200), explorer("--depth 2 --json").out.substr(0, 200));
  // 010 is ten statements, past the search's 8 (read as octal it was a depth-8 search).
  const Result deep = explorer("--depth 010 --max-states 100");
  EXPECT_EQ(deep.status, 2) << deep.out;
  EXPECT_NE(deep.out.find("--depth: must be 0 to 8"), std::string::npos) << deep.out;
  // --max-memory 0, like --max-states 0, is no limit (docs/explorer.md).
  EXPECT_EQ(explorer("--depth 3 --max-memory 0 --json").status, 0);
  EXPECT_EQ(document(explorer("--depth 3 --max-memory 0K --json"))["complete"], true);
}

// A path that exists is a file or an error; catalogue:NAME always names the catalogue.
TEST(ExplorerRun, CatalogueNamesAndPathsAreToldApart) {
  const TemporaryDirectory temporary;
  std::filesystem::create_directory(temporary.file("5"));
  const std::string out = fp8sm::test_support::run_command("cd '" + temporary.string() + "' && " + FP8SM_EXPLORER +
                                                           " run 5 2>&1; echo status=$?")
                              .out;
  EXPECT_NE(out.find("'5' is a directory, not a scenario file (for the catalogue entry, write 'catalogue:5')"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("status=2"), std::string::npos) << out;
  EXPECT_EQ(explorer("run catalogue:5 --json").out, explorer("run reentrant-single-3-layers --json").out);
}

// The explorer parses a deep program in time linear in its size and refuses nesting beyond
// the language's limits with the position (docs/scenarios.md).
TEST(ExplorerRun, NestingLimitsAreErrorsWithAPosition) {
  const TemporaryDirectory temporary;
  std::string blocks;
  for (int i = 0; i < 1001; ++i) blocks += "no_grad {\n";
  const Result deep = explorer("run " + write_file(temporary, "deep.scn", blocks));
  EXPECT_EQ(deep.status, 2);
  EXPECT_NE(deep.out.find("deep.scn:1001:1: error: blocks nest deeper than 1000"), std::string::npos) << deep.out;
  std::string checkpoints;
  for (int i = 0; i < 65; ++i) checkpoints += "checkpoint reentrant { ";
  const Result nested = explorer("run " + write_file(temporary, "checkpoints.scn", checkpoints));
  EXPECT_EQ(nested.status, 2);
  EXPECT_NE(nested.out.find("checkpoints.scn:1:1473: error: checkpoints nest deeper than 64"), std::string::npos)
      << nested.out;
  // At the limits a program runs (1000 blocks, 64 checkpoints, with a backward).
  std::string at_limit;
  for (int i = 0; i < 1000; ++i) at_limit += i < 64 ? "checkpoint nonreentrant { linear L0\n" : "autocast on { linear L1\n";
  for (int i = 0; i < 1000; ++i) at_limit += "}\n";
  const std::string limit = write_file(temporary, "limit.scn", at_limit + "backward\n");
  EXPECT_EQ(explorer("run " + limit + " --semantics fp8sm").status, 0);
}

#if defined(__SANITIZE_ADDRESS__)
#define FP8SM_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FP8SM_ASAN 1
#endif
#endif

// A resource the run cannot get (here memory, under a 40 MB address-space limit: the search
// fills it in seconds, one thread so no other stacks take a share) is one line and exit
// status 2, not an abort.
TEST(ExplorerErrors, OutOfMemoryIsOneLineAndExitTwo) {
#ifdef FP8SM_ASAN
  GTEST_SKIP() << "AddressSanitizer reserves terabytes of address space: no limit can be set";
#else
  const Result r = fp8sm::test_support::run_command("bash -c 'ulimit -v 40000; exec " + std::string(FP8SM_EXPLORER) +
                                                    " --depth 8 --threads 1' 2>&1");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("explorer: error: out of memory"), std::string::npos) << r.out;
#endif
}

// A worker thread that cannot start (the system's limit on threads or memory) stops the
// search: the threads already started are joined, and one line says which thread failed
// (before, the unjoined threads ended the program in std::terminate). The failure is injected
// at a chosen thread (explorer/search/test_faults.hpp), and then met for real under an address-space
// limit that 16 threads' stacks do not fit.
TEST(ExplorerErrors, AWorkerThreadThatCannotStartIsOneLineAndExitTwo) {
  const Result r = fp8sm::test_support::run_command("FP8SM_TEST_FAULT='refuse thread-start 5' " +
                                                    std::string(FP8SM_EXPLORER) + " --depth 3 --threads 16 2>&1");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_EQ(r.out, "explorer: error: cannot start worker thread 5 of 16: Resource temporarily unavailable\n");
#ifndef FP8SM_ASAN
  const Result limited = fp8sm::test_support::run_command("bash -c 'ulimit -v 100000; exec " +
                                                          std::string(FP8SM_EXPLORER) + " --depth 2 --threads 16' 2>&1");
  EXPECT_EQ(limited.status, 2) << limited.out;
  EXPECT_EQ(lines(limited.out), 1) << limited.out;
  EXPECT_EQ(limited.out.rfind("explorer: error: ", 0), 0u) << limited.out;
#endif
}

struct BadInput {
  const char* what;
  std::string args;
  std::string expected;  // a substring of the one-line error
};

// gtest prints a parameter by this: its arguments, not its bytes.
void PrintTo(const BadInput& input, std::ostream* out) { *out << "explorer " << input.args; }

class ExplorerErrors : public ::testing::TestWithParam<BadInput> {};

// The scenario files the cases name, written where each case runs: a directory of its own,
// named by relative paths in the arguments, so that a case prints the same in every run.
const char* const kScenarioFiles[][2] = {
    {"unclosed.scn", "autocast on {\n  linear L0\n"},
    {"unknown.scn", "autocast on {\n  lineer L0\n}\n"},
    {"tape.scn", "autocast on { linear L0 }\nbackward T\n"},
};

TEST_P(ExplorerErrors, OneLineWithLocationAndExitTwo) {
  const TemporaryDirectory temporary;
  for (const auto& [name, text] : kScenarioFiles) write_file(temporary, name, text);
  const Result r = fp8sm::test_support::run_command("cd '" + temporary.string() + "' && " + FP8SM_EXPLORER + " " +
                                                    GetParam().args + " 2>&1");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_EQ(lines(r.out), 1) << r.out;
  EXPECT_NE(r.out.find(GetParam().expected), std::string::npos) << r.out;
}

INSTANTIATE_TEST_SUITE_P(
    Inputs, ExplorerErrors,
    ::testing::Values(
        BadInput{"unclosed block", "run unclosed.scn", "unclosed.scn:3:1: error: unclosed block"},
        BadInput{"unknown statement", "run unknown.scn", "unknown.scn:2:3: error: unknown statement 'lineer'"},
        BadInput{"backward of an unknown tape", "run tape.scn", "tape.scn:2:10: error: backward of unknown tape 'T'"},
        BadInput{"unknown option", "run 5 --bogus", "--bogus"},
        BadInput{"unknown semantics", "run 5 --semantics legacy", "--semantics: unknown semantics 'legacy'"},
        BadInput{"unknown scenario", "run no-such-scenario", "no scenario file or catalogue entry named 'no-such-scenario'"},
        BadInput{"no command", "", "error"},
        BadInput{"unknown invariant", "--depth 2 --check I1,I10", "--check: unknown invariant 'I10'"},
        BadInput{"depth with a command", "run 5 --depth 3", "--depth"},
        BadInput{"memory budget without a size", "--depth 2 --max-memory lots", "--max-memory: 'lots' is not a size"},
        BadInput{"memory budget with an unknown unit", "--depth 2 --max-memory 4T", "--max-memory: '4T' is not a size"},
        BadInput{"unknown semantics before the command", "--semantics bogus run 5",
                 "--semantics: unknown semantics 'bogus'"},
        BadInput{"an option the command does not take", "--threads 2 run 5", "--threads is not an option of run"},
        BadInput{"json for list", "list --json", "--json is not an option of list"},
        BadInput{"a directory", "run .", "'.' is a directory, not a scenario file"},
        BadInput{"a read that fails", "run /proc/self/mem", "cannot read '/proc/self/mem'"},
        BadInput{"a fifo", "run /dev/stdin < /dev/null", "not a regular file"},
        BadInput{"too many threads", "--depth 2 --threads 100000", "--threads: must be 1 to 256"},
        BadInput{"negative state budget", "--depth 2 --max-states -1", "--max-states: '-1' is not a count"},
        BadInput{"no random program", "random --count 0", "--count: must be 1 to 10000000"},
        BadInput{"a seed that is not a number", "random --seed x", "--seed: 'x' is not a seed"},
        BadInput{"random programs of no length", "random --length 0", "--length: must be 1 to 1000"},
        BadInput{"a search option for random", "random --threads 2", "--threads is not an option of random"},
        // Every option belongs to the commands that take it, wherever it stands; the bare
        // --depth form is the search command and takes only the search's options.
        BadInput{"a random option for the search", "--depth 1 --seed 5 --length 3", "--seed is not an option of search"},
        BadInput{"a count for the search", "--depth 1 --count 3", "--count is not an option of search"},
        BadInput{"a random option for the search command", "search --depth 1 --length 3",
                 "--length is not an option of search"},
        BadInput{"a random option before the search command", "--seed 5 search --depth 1",
                 "--seed is not an option of search"},
        BadInput{"a search option before random", "--max-states 5 random", "--max-states is not an option of random"},
        BadInput{"a search option for table", "table --threads 2", "--threads is not an option of table"},
        BadInput{"the search without a depth", "search --semantics upstream", "search: give --depth N"},
        // An empty value is a value, and not one of these options takes it.
        BadInput{"an empty memory budget", "--depth 1 --max-memory ''", "--max-memory: an empty value"},
        BadInput{"an empty state budget", "--depth 1 --max-states ''", "--max-states: an empty value"},
        BadInput{"no invariants to check", "--depth 1 --check ''", "--check: an empty value"},
        BadInput{"an empty snapshot directory", "--depth 1 --snapshot ''", "--snapshot: an empty value"},
        BadInput{"an empty directory to resume", "--depth 1 --resume ''", "--resume: an empty value"},
        BadInput{"an empty seed", "random --seed ''", "--seed: an empty value"},
        BadInput{"an empty count", "random --count ''", "--count: an empty value"},
        BadInput{"an empty length", "random --length ''", "--length: an empty value"},
        BadInput{"an empty depth", "--depth ''", "--depth: an empty value"},
        BadInput{"an empty semantics", "run 5 --semantics ''", "--semantics: an empty value"},
        // Numbers are decimal digits: no 0x, no sign; too large is said so.
        BadInput{"hexadecimal threads", "--depth 1 --threads 0x3", "--threads: '0x3' is not"},
        BadInput{"a signed depth", "--depth +2", "--depth: '+2' is not"},
        BadInput{"a state budget past 64 bits", "--depth 1 --max-states 99999999999999999999",
                 "--max-states: '99999999999999999999' is too large"},
        BadInput{"a memory budget past 64 bits", "--depth 1 --max-memory 99999999999999999999K",
                 "--max-memory: '99999999999999999999K' is too large"},
        BadInput{"a memory budget below what a search holds before its first state", "--depth 1 --max-memory 16K",
                 "--max-memory: 16384 bytes is less than the"},
        BadInput{"hexadecimal memory", "--depth 1 --max-memory 0x10", "--max-memory: '0x10' is not a size"}),
    [](const ::testing::TestParamInfo<BadInput>& input) {
      std::string name = input.param.what;
      for (char& c : name) c = (c == ' ' || c == '-') ? '_' : c;
      return name;
    });

}  // namespace
