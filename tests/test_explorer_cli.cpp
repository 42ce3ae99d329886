// The explorer program as a user runs it: output of `explorer run`, and a one-line error with
// a location and exit status 2 for every kind of bad input.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <string>

namespace {

struct Result {
  int status = -1;
  std::string out;  // stdout and stderr together
};

Result explorer(const std::string& args) {
  const std::string command = std::string(FP8SM_EXPLORER) + " " + args + " 2>&1";
  Result result;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return result;
  std::array<char, 4096> buffer{};
  while (std::fgets(buffer.data(), static_cast<int>(buffer.size()), pipe) != nullptr) result.out += buffer.data();
  const int status = pclose(pipe);
  result.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

int lines(const std::string& text) {
  int n = 0;
  for (char c : text) n += c == '\n';
  return n;
}

TEST(ExplorerRun, SeedRowJsonMatchesTheLanguageDocument) {
  const Result r = explorer("run reentrant-single-3-layers --semantics upstream --json");
  EXPECT_EQ(r.status, 1);  // violations found
  EXPECT_EQ(r.out,
            "{\"semantics\": \"upstream\", \"steps\": [{\"forward_updates\": 2, \"backward_updates\": 3, "
            "\"raised\": [], \"violations\": [\"I1\", \"I2\", \"I3\", \"I6\", \"I8\"]}]}\n");
}

TEST(ExplorerRun, CleanRunExitsZero) {
  const Result r = explorer("run reentrant-single-3-layers --semantics pr3213 --json");
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("\"forward_updates\": 1, \"backward_updates\": 1"), std::string::npos);
}

TEST(ExplorerRun, RunsAFileAndReportsRaisedExceptions) {
  const std::string path = write_temp("raise.scn", "autocast on { linear L0; raise always }\n");
  const Result r = explorer("run " + path + " --semantics upstream --json");
  EXPECT_NE(r.out.find("\"raised\": [{\"kind\": \"UserError\", \"message\": \"raised by 'raise always'\"}]"),
            std::string::npos)
      << r.out;
}

TEST(ExplorerRun, RowNumberSelectsACatalogueEntry) {
  EXPECT_EQ(explorer("run 5 --json").out, explorer("run reentrant-single-3-layers --json").out);
}

TEST(ExplorerRun, DefaultSemanticsIsFp8sm) {
  EXPECT_EQ(explorer("run 5 --json").out, explorer("run 5 --semantics fp8sm --json").out);
  EXPECT_NE(explorer("run 5 --json").out.find("\"semantics\": \"fp8sm\""), std::string::npos);
}

TEST(ExplorerDepth, SearchesAndReportsOneJsonObject) {
  const Result clean = explorer("--depth 2 --json");
  EXPECT_EQ(clean.status, 0);
  EXPECT_EQ(lines(clean.out), 1);
  EXPECT_NE(clean.out.find("\"semantics\": \"fp8sm\""), std::string::npos);
  EXPECT_NE(clean.out.find("\"violations\": []"), std::string::npos);
  const Result found = explorer("--depth 2 --semantics upstream --json");
  EXPECT_EQ(found.status, 1);
  EXPECT_NE(found.out.find("\"invariant\": \"I4\""), std::string::npos);
}

TEST(ExplorerDepth, MemoryBudgetStopsWithAPartialReport) {
  // 1 MiB holds about 70 000 states at 15 bytes each; depth 5 has 1.4 million.
  const Result r = explorer("--depth 5 --max-memory 1M --json");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("\"complete\": false, \"stopped_by\": \"max-memory\""), std::string::npos) << r.out;
  const Result text = explorer("--depth 5 --max-memory 1M");
  EXPECT_NE(text.out.find("stopped at the memory budget (--max-memory)"), std::string::npos) << text.out;
}

TEST(ExplorerList, ShowsTheWholeCatalogue) {
  const Result r = explorer("list");
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(lines(r.out), 26);
}

struct BadInput {
  const char* what;
  std::string args;
  std::string expected;  // a substring of the one-line error
};

class ExplorerErrors : public ::testing::TestWithParam<BadInput> {};

TEST_P(ExplorerErrors, OneLineWithLocationAndExitTwo) {
  const Result r = explorer(GetParam().args);
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_EQ(lines(r.out), 1) << r.out;
  EXPECT_NE(r.out.find(GetParam().expected), std::string::npos) << r.out;
}

INSTANTIATE_TEST_SUITE_P(
    Inputs, ExplorerErrors,
    ::testing::Values(
        BadInput{"unclosed block", "run " + write_temp("unclosed.scn", "autocast on {\n  linear L0\n"),
                 "unclosed.scn:3:1: error: unclosed block"},
        BadInput{"unknown statement", "run " + write_temp("unknown.scn", "autocast on {\n  lineer L0\n}\n"),
                 "unknown.scn:2:3: error: unknown statement 'lineer'"},
        BadInput{"backward of an unknown tape", "run " + write_temp("tape.scn", "autocast on { linear L0 }\nbackward T\n"),
                 "tape.scn:2:10: error: backward of unknown tape 'T'"},
        BadInput{"unknown option", "run 5 --bogus", "--bogus"},
        BadInput{"unknown semantics", "run 5 --semantics legacy", "--semantics: unknown semantics 'legacy'"},
        BadInput{"unknown scenario", "run no-such-scenario", "no scenario file or catalogue entry named 'no-such-scenario'"},
        BadInput{"no command", "", "error"},
        BadInput{"unknown invariant", "--depth 2 --check I1,I10", "--check: unknown invariant 'I10'"},
        BadInput{"depth with a command", "run 5 --depth 3", "--depth"},
        BadInput{"memory budget without a size", "--depth 2 --max-memory lots", "--max-memory: 'lots' is not a size"},
        BadInput{"memory budget with an unknown unit", "--depth 2 --max-memory 4T", "--max-memory: '4T' is not a size"}),
    [](const ::testing::TestParamInfo<BadInput>& input) {
      std::string name = input.param.what;
      for (char& c : name) c = (c == ' ' || c == '-') ? '_' : c;
      return name;
    });

}  // namespace
