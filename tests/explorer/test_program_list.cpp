// `explorer --depth N --programs`: the program of every distinct top-level state, against a
// brute-force enumeration that shares no code with the search (every statement sequence the
// parser accepts, run from the empty program), the same bytes for any threads and ranks, and
// its JSON lines against `explorer run --json` of each program.
#include <fmt/core.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "explorer/model/alphabet.hpp"
#include "explorer/model/model_state.hpp"
#include "explorer/report/program_list.hpp"
#include "explorer/search/search.hpp"
#include "explorer/search/thread_ranks.hpp"
#include "run_command.hpp"
#include "spec/scenario_parser.hpp"
#include "temporary_directory.hpp"

namespace fp8sm {
namespace {

using explorer::SearchOptions;
using spec::Op;
using spec::Semantics;
using spec::Statement;
using test_support::CommandResult;
using test_support::TemporaryDirectory;

SearchOptions options(Semantics s, int depth) {
  SearchOptions o;
  o.semantics = s;
  o.depth = depth;
  return o;
}

// The list a search hands over, as the explorer prints it (rank 0's), on `ranks` ranks.
std::string listed(const SearchOptions& base, bool json, int ranks = 1) {
  std::string out;
  std::mutex mutex;
  explorer::ThreadRanks::run(ranks, [&](explorer::Ranks& r) {
    SearchOptions o = base;
    std::uint64_t index = 0;
    std::string mine;
    o.programs = [&](int, const explorer::SearchPath& path) {
      mine += explorer::program_line(explorer::path_program(path, o.alphabet), ++index, o.semantics, json);
    };
    const explorer::SearchResult result = explorer::search(o, r);
    EXPECT_TRUE(result.complete);
    std::lock_guard<std::mutex> lock(mutex);
    if (r.rank() == 0) {
      out = mine;
    } else {
      EXPECT_EQ(mine, "") << "rank " << r.rank() << " listed programs";
    }
  });
  return out;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// Whether two lists are the same bytes; if not, where they first differ (a list is thousands of
// lines: not the whole of both).
::testing::AssertionResult same_list(const std::string& a, const std::string& b) {
  if (a == b) return ::testing::AssertionSuccess();
  const std::vector<std::string> x = lines_of(a);
  const std::vector<std::string> y = lines_of(b);
  std::size_t i = 0;
  while (i < x.size() && i < y.size() && x[i] == y[i]) ++i;
  return ::testing::AssertionFailure() << x.size() << " and " << y.size() << " lines, first different at line " << i + 1
                                       << ":\n  " << (i < x.size() ? x[i] : "(none)") << "\n  "
                                       << (i < y.size() ? y[i] : "(none)");
}

// The explorer program's standard output; its standard error in `err`.
CommandResult explorer_run(const std::string& args, std::string* err = nullptr) {
  const TemporaryDirectory temporary;
  const std::string err_path = temporary.file("stderr");
  const CommandResult r =
      test_support::run_command(std::string(FP8SM_EXPLORER) + " " + args + " 2>'" + err_path + "'");
  if (err != nullptr) {
    std::ifstream in(err_path);
    *err = std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  return r;
}

// ---- the brute-force enumeration -----------------------------------------------------------

// Every statement of the language over two modules and one tape, the closing brace included:
// the enumeration tries each at every point and keeps what the parser accepts.
std::vector<Statement> every_statement() {
  std::vector<Statement> all;
  for (Op op : {Op::AutocastOn, Op::AutocastOff, Op::CheckpointReentrant, Op::CheckpointNonReentrant, Op::NoGrad,
                Op::Try, Op::Close, Op::RaiseAlways, Op::RaiseOriginal, Op::RaiseRecompute, Op::RecomputeUncaptured,
                Op::Step}) {
    all.push_back(spec::make_statement(op));
  }
  for (int m : {0, 1}) all.push_back(spec::make_statement(Op::Linear, static_cast<std::uint16_t>(m)));
  all.push_back(spec::make_statement(Op::Save, 0));
  for (std::uint16_t graph : {spec::kCurrentGraph, std::uint16_t{0}}) {
    for (bool retain : {false, true}) all.push_back(spec::make_statement(Op::Backward, graph, retain));
  }
  return all;
}

// Whether the statements, with their open blocks closed, are a program the parser accepts: the
// language's static rules, checked by the parser, not by the search's alphabet.
bool parses(std::vector<Statement> statements) {
  int open = 0;
  for (const Statement& s : statements) open += spec::opens_block(s.op) ? 1 : s.op == Op::Close ? -1 : 0;
  if (open < 0) return false;
  for (; open > 0; --open) statements.push_back(spec::make_statement(Op::Close));
  try {
    spec::parse_scenario(spec::print_scenario_one_line(explorer::program_of(statements, {})));
    return true;
  } catch (const spec::ParseError&) {
    return false;
  }
}

// A state of the model and the runner that executes statements on it.
class Probe {
 public:
  explicit Probe(const std::shared_ptr<explorer::ModelRunner>& runner)
      : runner_(runner), state_(std::make_unique<explorer::ModelState>()) {
    runner_->initial(*state_);
  }
  Probe(const Probe& other) : runner_(other.runner_), state_(std::make_unique<explorer::ModelState>(*other.state_)) {}
  void apply(const Statement& s) { runner_->apply(*state_, s); }
  // The search's own state key: a hash of the canonical bytes it fingerprints.
  std::size_t key() const { return std::hash<std::string>{}(runner_->canonical_bytes(*state_)); }

 private:
  std::shared_ptr<explorer::ModelRunner> runner_;
  std::unique_ptr<explorer::ModelState> state_;
};

// What running every complete program of up to `budget` statements reaches: per state at top
// level (a complete program ends there), the fewest statements of a program that does. Module
// names in order of first use only (L1 after L0), as the search's symmetry reduction has them.
struct Enumeration {
  std::map<std::size_t, int> top_level;  // state key -> shortest program's statements
  std::size_t empty_program = 0;         // the empty program's state
  std::uint64_t programs = 0;            // complete non-empty programs run

  // The states the list must hold: every top-level state but the empty program's (which a
  // non-empty program might reach too).
  std::size_t listable() const { return top_level.size() - top_level.count(empty_program); }
};

void enumerate(const Probe& state, std::vector<Statement>& program, int open, int statements, int budget,
               int modules_used, const std::vector<Statement>& alphabet, Enumeration& out) {
  if (open == 0 && !program.empty()) {
    ++out.programs;
    const auto [at, added] = out.top_level.emplace(state.key(), statements);
    if (!added) at->second = std::min(at->second, statements);
  }
  for (const Statement& s : alphabet) {
    const bool is_close = s.op == Op::Close;
    if (!is_close && statements == budget) continue;
    if (s.op == Op::Linear && s.name > modules_used) continue;
    program.push_back(s);
    if (parses(program)) {
      Probe child(state);
      child.apply(s);
      const int opens = spec::opens_block(s.op) ? 1 : is_close ? -1 : 0;
      const int used = s.op == Op::Linear ? std::max(modules_used, s.name + 1) : modules_used;
      enumerate(child, program, open + opens, statements + (is_close ? 0 : 1), budget, used, alphabet, out);
    }
    program.pop_back();
  }
}

Enumeration enumerate_programs(Semantics s, int budget) {
  const auto runner = std::make_shared<explorer::ModelRunner>(s, spec::InvariantSet{}, true);
  Enumeration out;
  const Probe root(runner);
  out.empty_program = root.key();
  std::vector<Statement> program;
  enumerate(root, program, 0, 0, budget, 0, every_statement(), out);
  return out;
}

// The state a printed program reaches, run statement by statement from the empty program.
std::size_t state_of(const spec::Program& program, Semantics s) {
  const auto runner = std::make_shared<explorer::ModelRunner>(s, spec::InvariantSet{}, true);
  Probe probe(runner);
  for (const Statement& statement : program.statements) probe.apply(statement);
  return probe.key();
}

// ---- the list ------------------------------------------------------------------------------

// Every line is a program the parser accepts, printed back to the same line; no two are the
// same; the depths never go down; and each is the shortest way to a state the brute-force
// enumeration reaches at top level, no two the same state, every such state but the empty
// program's listed once. To depth 4 for upstream, the semantics TE's conformance check runs
// the list on (a second or two), to 3 for the others.
TEST(ProgramList, OneShortestProgramPerTopLevelStateOfABruteForceEnumeration) {
  for (Semantics s : spec::kAllSemantics) {
    for (int depth = 1; depth <= (s == Semantics::Upstream ? 4 : 3); ++depth) {
      SCOPED_TRACE(fmt::format("{}, depth {}", spec::name(s), depth));
      const Enumeration all = enumerate_programs(s, depth);
      const std::vector<std::string> lines = lines_of(listed(options(s, depth), false));
      std::set<std::string> distinct_lines;
      std::set<std::size_t> states;
      int previous_depth = 0;
      for (const std::string& line : lines) {
        ASSERT_FALSE(line.empty());
        EXPECT_TRUE(distinct_lines.insert(line).second) << "twice: " << line;
        const spec::Program program = spec::parse_scenario(line);  // throws if not a program
        EXPECT_EQ(spec::print_scenario_one_line(program), line);
        const int statements = explorer::program_depth(program);
        EXPECT_GE(statements, previous_depth) << line;
        EXPECT_LE(statements, depth) << line;
        previous_depth = statements;
        const std::size_t state = state_of(program, s);
        EXPECT_TRUE(states.insert(state).second) << "a state listed twice, again by: " << line;
        EXPECT_NE(state, all.empty_program) << "the empty program's state, listed by: " << line;
        const auto found = all.top_level.find(state);
        ASSERT_NE(found, all.top_level.end()) << "no program of the enumeration reaches the state of: " << line;
        EXPECT_EQ(statements, found->second) << "not a shortest program to its state: " << line;
      }
      EXPECT_EQ(lines.size(), all.listable());
      EXPECT_GT(all.programs, lines.size());  // programs that reach the same state are merged
    }
  }
}

// A Linear on data keeps what TE's autograd context keeps of its input (ctx.requires_dgrad),
// so its state is not the state of the same Linear on the chain, and the list runs programs
// that go on from it on TE: a broken claim that read the input's grad shows on one of them
// (docs/conformance.md, "The mutation score"). Before, `autocast on { data; linear L0 }`
// reached the state of `autocast on { linear L0 }` and nothing was listed after it.
TEST(ProgramList, ALinearOnDataIsNotMergedWithOneOnTheChain) {
  const auto state = [](const char* text) { return state_of(spec::parse_scenario(text), Semantics::Upstream); };
  EXPECT_NE(state("autocast on { data; linear L0 }"), state("autocast on { linear L0 }"));
  EXPECT_NE(state("autocast on { data; linear L0; backward retain }"), state("autocast on { linear L0; backward retain }"));
  // What follows a data Linear's node no more than its input: the same state either way.
  EXPECT_EQ(state("data; autocast on { linear L0 }"), state("autocast on { data; linear L0 }"));

  SearchOptions o = options(Semantics::Upstream, 4);
  o.alphabet.data = true;
  const std::vector<std::string> lines = lines_of(listed(o, false));
  const auto listed_line = [&](const std::string& line) {
    return std::find(lines.begin(), lines.end(), line) != lines.end();
  };
  EXPECT_TRUE(listed_line("autocast on { data; linear L0; backward retain }"));
  EXPECT_TRUE(listed_line("autocast on { linear L0; backward retain }"));
}

// --programs-beyond N: past N statements, a program is kept only if it runs a backward and
// holds a Linear inside a checkpoint for each statement past N.
TEST(ProgramList, BeyondADepthOneLinearInACheckpointPerStatementAndABackward) {
  const auto kept = [](const char* text, int beyond) { return explorer::listed_beyond(spec::parse_scenario(text), beyond); };
  EXPECT_TRUE(kept("step; step", 2));                                           // not past 2
  EXPECT_TRUE(kept("checkpoint reentrant { linear L0 }; backward", 2));         // 3: one needed
  EXPECT_FALSE(kept("checkpoint reentrant { linear L0 }; linear L1; backward retain", 2));  // 4: one of two
  EXPECT_TRUE(kept("checkpoint reentrant { linear L0; linear L1 }; backward", 2));
  EXPECT_TRUE(kept("checkpoint nonreentrant { autocast on { linear L0 } }; checkpoint reentrant { linear L0 }; backward", 4));
  EXPECT_FALSE(kept("checkpoint reentrant { linear L0; linear L1; linear L0 }", 2));          // no backward
  EXPECT_FALSE(kept("autocast on { linear L0 }; checkpoint reentrant { }; backward", 2));     // outside it

  // The explorer prints those lines of the whole list, with the indexes they have there.
  const CommandResult whole = explorer_run("--depth 4 --semantics upstream --programs --json");
  const CommandResult sliced = explorer_run("--depth 4 --semantics upstream --programs --json --programs-beyond 2");
  ASSERT_EQ(whole.status, 0);
  ASSERT_EQ(sliced.status, 0);
  std::string expected;
  for (const std::string& line : lines_of(whole.out)) {
    const auto document = nlohmann::json::parse(line);
    if (explorer::listed_beyond(spec::parse_scenario(document["program"].get<std::string>()), 2)) expected += line + "\n";
  }
  EXPECT_TRUE(same_list(sliced.out, expected));
  EXPECT_LT(lines_of(sliced.out).size(), lines_of(whole.out).size());
  EXPECT_EQ(explorer_run("--depth 4 --programs --programs-beyond 5").status, 2);
  EXPECT_EQ(explorer_run("--depth 4 --programs-beyond 2").status, 2);
}

// Without symmetry the enumeration tries every module name anywhere.
TEST(ProgramList, WithoutSymmetryEveryModuleNameAnywhere) {
  SearchOptions o = options(Semantics::Pr3213, 3);
  o.alphabet.symmetry = false;
  const auto runner = std::make_shared<explorer::ModelRunner>(o.semantics, spec::InvariantSet{}, true);
  Enumeration all;
  const Probe root(runner);
  all.empty_program = root.key();
  std::vector<Statement> program;
  enumerate(root, program, 0, 0, 3, 2, every_statement(), all);  // both names used "already"
  const std::vector<std::string> lines = lines_of(listed(o, false));
  EXPECT_EQ(lines.size(), all.listable());
  EXPECT_GT(lines.size(), lines_of(listed(options(Semantics::Pr3213, 3), false)).size());
}

// The order is the one-process search's discovery order, whichever threads and ranks found
// the states: the same bytes, text and JSON.
TEST(ProgramList, TheSameBytesForAnyThreadsAndRanks) {
  for (bool json : {false, true}) {
    SearchOptions o = options(Semantics::Upstream, 4);
    const std::string one = listed(o, json);
    ASSERT_FALSE(one.empty());
    for (int ranks : {2, 3}) EXPECT_TRUE(same_list(listed(o, json, ranks), one)) << ranks << " ranks, json " << json;
    o.threads = 2;
    EXPECT_TRUE(same_list(listed(o, json), one)) << "2 threads, json " << json;
    EXPECT_TRUE(same_list(listed(o, json, 2), one)) << "2 threads in each of 2 ranks, json " << json;
  }
}

// With two ranks, each owning about half of a layer's top-level states, the gathering to rank
// 0 takes several messages per rank: messages of 1000 states, where layer 4 of upstream holds
// more than four times as many; and of one state each, where every rank's list, of any length,
// ends on an empty message. No message at all is refused.
TEST(ProgramList, ListsOfManyMessagesPerRank) {
  SearchOptions o = options(Semantics::Upstream, 4);
  const std::string one = listed(o, false);
  std::size_t layer4 = 0;
  for (const std::string& line : lines_of(one)) layer4 += explorer::program_depth(spec::parse_scenario(line)) == 4;
  EXPECT_GT(layer4, 4u * 1000u);
  for (const std::size_t per_message : {std::size_t{1000}, std::size_t{1}}) {
    o.programs_per_message = per_message;
    EXPECT_TRUE(same_list(listed(o, false, 2), one)) << per_message << " programs per message";
  }
  o.programs_per_message = 0;
  o.programs = [](int, const explorer::SearchPath&) {};
  EXPECT_THROW(explorer::search(o), std::invalid_argument);
}

// The binary prints what the library lists, for any --threads, and says on standard error how
// many programs of how many states.
TEST(ProgramList, TheExplorerPrintsTheListAndASummary) {
  std::string err;
  const CommandResult r = explorer_run("--depth 4 --semantics upstream --programs", &err);
  EXPECT_EQ(r.status, 0) << err;  // upstream violates invariants: the list is the output
  EXPECT_TRUE(same_list(r.out, listed(options(Semantics::Upstream, 4), false)));
  const std::size_t programs = lines_of(r.out).size();
  EXPECT_NE(err.find(fmt::format("explorer: {} programs, one per distinct top-level state", programs)),
            std::string::npos)
      << err;
  const CommandResult report = explorer_run("--depth 4 --semantics upstream --json");
  const auto distinct = nlohmann::json::parse(report.out)["distinct_states"].get<std::uint64_t>();
  EXPECT_NE(err.find(fmt::format("of {} distinct states", distinct)), std::string::npos) << err;
  EXPECT_TRUE(same_list(explorer_run("search --depth 4 --semantics upstream --programs --threads 2").out, r.out));
  EXPECT_TRUE(same_list(explorer_run("--programs --threads 2 --semantics upstream search --depth 4").out, r.out));
}

// --check and --no-canonical-ids change what a state is, and so the list: fewer states when a
// state carries less, more when ids are not merged.
TEST(ProgramList, FollowsTheSearchsOptions) {
  const std::size_t all = lines_of(explorer_run("--depth 3 --programs").out).size();
  EXPECT_LT(lines_of(explorer_run("--depth 3 --programs --check I1").out).size(), all);
  EXPECT_GT(lines_of(explorer_run("--depth 3 --programs --no-canonical-ids").out).size(), all);
  const std::string three = explorer_run("--depth 3 --programs --modules 3").out;
  EXPECT_NE(three.find("linear L2"), std::string::npos);
  EXPECT_EQ(explorer_run("--depth 3 --programs").out.find("linear L2"), std::string::npos);
}

// Every --json line is an fp8sm-program/1 document (test_json_documents checks it against
// docs/json.md) whose steps are those `explorer run --json` prints for its program.
TEST(ProgramList, JsonStepsAreThoseOfExplorerRun) {
  for (Semantics s : spec::kAllSemantics) {
    const std::string semantics(spec::name(s));
    const CommandResult r = explorer_run("--depth 2 --programs --json --semantics " + semantics);
    ASSERT_EQ(r.status, 0);
    const std::vector<std::string> text = lines_of(explorer_run("--depth 2 --programs --semantics " + semantics).out);
    const std::vector<std::string> lines = lines_of(r.out);
    ASSERT_EQ(lines.size(), text.size());
    for (std::size_t i = 0; i < lines.size(); ++i) {
      const nlohmann::json d = nlohmann::json::parse(lines[i]);
      EXPECT_EQ(d["format"], "fp8sm-program/1");
      EXPECT_EQ(d["index"], i + 1);
      EXPECT_EQ(d["program"], text[i]);
      EXPECT_EQ(d["semantics"], semantics);
      EXPECT_EQ(d["depth"], explorer::program_depth(spec::parse_scenario(text[i])));
      const CommandResult run =
          test_support::run_command(std::string(FP8SM_EXPLORER) + " run - --json --semantics " + semantics +
                                    " <<'EOF'\n" + text[i] + "\nEOF");
      EXPECT_EQ(d["steps"], nlohmann::json::parse(run.out)["steps"]) << text[i];
    }
  }
}

// What would cut the list short, resume it after layers it did not list, or belongs to the
// report it replaces is refused, exit 2, saying why.
TEST(ProgramList, RefusesWhatWouldMakeTheListIncomplete) {
  const TemporaryDirectory temporary;
  const std::string dir = temporary.file("snapshot");
  for (const std::string& option : {std::string("--max-states 100"), std::string("--max-memory 1G"),
                                    "--snapshot " + dir, "--resume " + dir, std::string("--coverage"),
                                    std::string("--mermaid"), std::string("--dot")}) {
    std::string err;
    const CommandResult r = explorer_run("--depth 3 --programs " + option, &err);
    EXPECT_EQ(r.status, 2) << option;
    EXPECT_EQ(r.out, "") << option;
    const std::string name = option.substr(0, option.find(' '));
    EXPECT_NE(err.find("explorer: error: --programs"), std::string::npos) << err;
    EXPECT_NE(err.find("not with " + name), std::string::npos) << err;
  }
  EXPECT_EQ(::access(dir.c_str(), F_OK), -1) << "a refused --snapshot made its directory";
  EXPECT_EQ(explorer_run("--depth 3 --programs --max-states 0 --max-memory 0").status, 0);  // 0: no limit
  EXPECT_EQ(explorer_run("run 1 --programs").status, 2);
  SearchOptions o = options(Semantics::Fp8sm, 3);
  o.programs = [](int, const explorer::SearchPath&) {};
  o.max_states = 100;
  EXPECT_THROW(explorer::search(o), std::invalid_argument);
}

// A list that could not be written (a full disk) is an error, not a complete list: whether it
// fails at once (a list longer than the output's buffer) or only when flushed at the end.
TEST(ProgramList, AListThatCannotBeWrittenIsAnError) {
  if (::access("/dev/full", W_OK) != 0) GTEST_SKIP() << "no /dev/full here";
  for (const char* depth : {"1", "4"}) {
    std::string err;
    const CommandResult r = explorer_run(fmt::format("--depth {} --programs > /dev/full", depth), &err);
    EXPECT_EQ(r.status, 2) << depth;
    EXPECT_NE(err.find("explorer: error: cannot write"), std::string::npos) << err;
  }
}

// A signal stops the search: the layers completed before it are listed, and the exit status
// (4) and the summary say that the list is incomplete.
TEST(ProgramList, AnInterruptedListSaysItIsIncomplete) {
  const CommandResult r = explorer_run("--depth 4 --semantics upstream --programs");
  const CommandResult cut = test_support::run_command("FP8SM_TEST_FAULT='interrupt programs-listed 2' " +
                                                      std::string(FP8SM_EXPLORER) +
                                                      " --depth 4 --semantics upstream --programs 2>/dev/null");
  EXPECT_EQ(cut.status, 4);
  EXPECT_TRUE(same_list(cut.out, explorer_run("--depth 2 --semantics upstream --programs").out));
  EXPECT_LT(cut.out.size(), r.out.size());
  const CommandResult says = test_support::run_command("FP8SM_TEST_FAULT='interrupt programs-listed 2' " +
                                                       std::string(FP8SM_EXPLORER) +
                                                       " --depth 4 --programs 2>&1 >/dev/null");
  EXPECT_NE(says.out.find("the list is incomplete"), std::string::npos) << says.out;
  EXPECT_NE(says.out.find("depths 1 to 2 only"), std::string::npos) << says.out;
}

}  // namespace
}  // namespace fp8sm
