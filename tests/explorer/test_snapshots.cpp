// Snapshots (--snapshot DIR, --resume DIR): a search resumed from any complete layer ends with
// the uninterrupted result, also after a kill -9 at any point of writing a snapshot or after
// SIGINT or SIGTERM stopped it; a corrupt, incomplete or mismatched snapshot is refused with
// exit 2 and one line saying why.
#include <gtest/gtest.h>
#include <xxhash.h>
#include <fmt/core.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "explorer/report/search_report.hpp"
#include "explorer/search/search.hpp"
#include "explorer/search/snapshot.hpp"
#include "explorer/search/thread_ranks.hpp"
#include "run_command.hpp"
#include "scenario_helpers.hpp"
#include "temporary_directory.hpp"

namespace fp8sm {
namespace {

namespace fs = std::filesystem;
using explorer::SearchOptions;
using spec::Semantics;

// A directory of its own for each test, removed after it.
class Snapshots : public test_support::WithTemporaryDirectory {
 protected:
  std::string dir(const std::string& name) const { return temporary_.file(name); }
};

std::string without_totals(const std::string& report) { return report.substr(0, report.find("total:")); }

std::string report(const SearchOptions& o, const explorer::SearchResult& r) {
  return without_totals(explorer::search_text(o, r));
}

struct ExplorerRun {
  int status = -1;
  std::string out;  // standard output and error
};

ExplorerRun explorer_run(const std::string& args, const std::string& environment = "") {
  const auto r = test_support::run_command(environment + " " + FP8SM_EXPLORER + " " + args + " 2>&1");
  return ExplorerRun{r.status, r.out};
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

int manifest_layer(const std::string& dir) {
  const auto manifest = explorer::read_manifest(dir);
  return manifest ? manifest->layer : -1;
}

// The manifest with one line replaced and its checksum made right again: a snapshot another
// build or version wrote, not a damaged one.
void rewrite_manifest_line(const std::string& dir, const std::string& key, const std::string& value) {
  std::istringstream in(read_file(dir + "/manifest"));
  std::string text;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("checksum ", 0) == 0) break;
    if (line.rfind(key + " ", 0) == 0) line = key + " " + value;
    text += line + "\n";
  }
  const std::string checksum = fmt::format("{:016x}", XXH64(text.data(), text.size(), 0));
  write_file(dir + "/manifest", text + "checksum " + checksum + "\n");
}

TEST_F(Snapshots, AResumedSearchEndsWithTheUninterruptedResult) {
  SearchOptions o = test_support::search_options(Semantics::Upstream, 4);
  o.coverage = true;
  const std::string expected = report(o, explorer::search(o));
  o.snapshot_dir = dir("s");
  EXPECT_EQ(report(o, explorer::search(o)), expected);
  // The last complete layer but the last is kept, with nothing of the layers before it.
  EXPECT_EQ(manifest_layer(o.snapshot_dir), 3);
  EXPECT_TRUE(fs::exists(explorer::rank_file(o.snapshot_dir, 3, 0, 1)));
  for (int layer = 0; layer < 3; ++layer) EXPECT_FALSE(fs::exists(explorer::rank_file(o.snapshot_dir, layer, 0, 1)));
  o.resume = true;
  const explorer::SearchResult resumed = explorer::search(o);
  EXPECT_EQ(resumed.resumed_from_layer, 3);
  EXPECT_EQ(report(o, resumed), expected);
}

TEST_F(Snapshots, ManyRanksResumeAsTheyWrote) {
  SearchOptions o = test_support::search_options(Semantics::Pr3213, 4);
  const std::string expected = report(o, explorer::search(o));
  o.snapshot_dir = dir("s");
  for (bool resume : {false, true}) {
    o.resume = resume;
    std::mutex mutex;
    std::string rank0;
    explorer::ThreadRanks::run(3, [&](explorer::Ranks& ranks) {
      const explorer::SearchResult result = explorer::search(o, ranks);
      std::lock_guard<std::mutex> lock(mutex);
      if (ranks.rank() == 0) rank0 = report(o, result);
    });
    EXPECT_EQ(rank0, expected) << (resume ? "resumed" : "first run");
  }
  for (int rank = 0; rank < 3; ++rank) EXPECT_TRUE(fs::exists(explorer::rank_file(o.snapshot_dir, 3, rank, 3)));
}

// kill -9 after the snapshot of layer 3 is complete, and while the snapshot of layer 3 is half
// written (the rank's file in place, the manifest not yet): they resume from layers 3 and 2.
TEST_F(Snapshots, AKilledRunResumesToTheUninterruptedResult) {
  const std::string search = "--depth 4 --semantics upstream --coverage";
  const ExplorerRun uninterrupted = explorer_run(search);
  ASSERT_EQ(uninterrupted.status, 1);
  for (const auto& [fault, layer] : {std::pair<std::string, int>{"kill manifest-written 3", 3},
                                     std::pair<std::string, int>{"kill rank-file-written 3", 2}}) {
    const std::string d = dir(fault.substr(5, 8));
    const ExplorerRun killed = explorer_run(search + " --snapshot " + d, "FP8SM_TEST_FAULT='" + fault + "'");
    EXPECT_EQ(killed.status, 128 + 9) << fault << ": " << killed.out;  // the shell's status for SIGKILL
    EXPECT_EQ(manifest_layer(d), layer) << fault;
    const ExplorerRun resumed = explorer_run(search + " --resume " + d);
    EXPECT_EQ(resumed.status, 1) << resumed.out;
    EXPECT_NE(resumed.out.find(fmt::format("explorer: resumed from layer {} of the snapshot in", layer)),
              std::string::npos);
    const std::string resumed_report = resumed.out.substr(resumed.out.find('\n') + 1);
    EXPECT_EQ(without_totals(resumed_report), without_totals(uninterrupted.out)) << fault;
  }
}

// The explorer as a child of this process, so that the test can signal it and wait for it (also
// for it to stop itself: FP8SM_TEST_FAULT's "stop"), its standard output and error in `output`.
// Killed and waited for when the test leaves it running.
class ExplorerProcess {
 public:
  ExplorerProcess(const std::vector<std::string>& args, const std::string& output, const std::string& fault = "") {
    std::vector<std::string> words = {FP8SM_EXPLORER};
    words.insert(words.end(), args.begin(), args.end());
    std::vector<std::string> environment;
    for (char** e = environ; *e != nullptr; ++e) {
      if (std::strncmp(*e, "FP8SM_TEST_FAULT=", 17) != 0) environment.emplace_back(*e);
    }
    if (!fault.empty()) environment.push_back("FP8SM_TEST_FAULT=" + fault);
    std::vector<char*> argv, envp;
    for (std::string& w : words) argv.push_back(w.data());
    for (std::string& e : environment) envp.push_back(e.data());
    argv.push_back(nullptr);
    envp.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, output.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
    if (posix_spawn(&pid_, FP8SM_EXPLORER, &actions, nullptr, argv.data(), envp.data()) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&actions);
  }
  ~ExplorerProcess() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  ExplorerProcess(const ExplorerProcess&) = delete;
  ExplorerProcess& operator=(const ExplorerProcess&) = delete;

  bool started() const { return pid_ > 0; }
  void signal(int number) const { ::kill(pid_, number); }
  // Waits until it stops itself; false if it ended instead.
  bool wait_until_stopped() {
    int status = 0;
    if (::waitpid(pid_, &status, WUNTRACED) != pid_) return false;
    if (WIFSTOPPED(status)) return true;
    pid_ = -1;
    return false;
  }
  // Whether it ended (without waiting), and then its exit status (-1: a signal ended it).
  bool ended(int& exit_status) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) != pid_) return false;
    pid_ = -1;
    exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return true;
  }
  // Waits for it to end: its exit status (-1: a signal ended it).
  int wait() {
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

 private:
  pid_t pid_ = -1;
};

// SIGINT or SIGTERM stops a search before its next parent: the report of what it explored,
// one line on standard error saying where it stopped, exit status 4; the snapshot of the last
// complete layer stays and resumes to the uninterrupted result. The explorer stops itself
// (SIGSTOP) once the snapshot of layer 2 is complete, so the signal comes at a known point: the
// search stops before the first parent of layer 3, with layers 0 to 2 explored (the states the
// uninterrupted report counts to depth 2), and the resumed search builds layers 3 and 4 (a
// layer with a next frontier, and the last). Depth 4: the sanitizer build runs this too.
TEST_F(Snapshots, AnInterruptedSearchReportsWhatItExploredAndResumes) {
  const std::string search = "--depth 4 --semantics upstream --coverage";
  const ExplorerRun uninterrupted = explorer_run(search);
  ASSERT_EQ(uninterrupted.status, 1);
  // The layer table's row of depth 2: "2  <frontier>  <distinct to depth 2>  <transitions>".
  const std::size_t row = uninterrupted.out.find("\n2  ");
  ASSERT_NE(row, std::string::npos) << uninterrupted.out;
  std::istringstream row_fields(uninterrupted.out.substr(row + 1));
  std::uint64_t row_depth = 0, frontier = 0, explored = 0;
  ASSERT_TRUE(row_fields >> row_depth >> frontier >> explored);
  for (const auto& [signal, name] : {std::pair<int, std::string>{SIGINT, "SIGINT"}, {SIGTERM, "SIGTERM"}}) {
    SCOPED_TRACE(name);
    const std::string d = dir(name);
    const std::string output = dir(name + ".out");
    ExplorerProcess explorer({"--depth", "4", "--semantics", "upstream", "--coverage", "--snapshot", d}, output,
                             "stop manifest-written 2");
    ASSERT_TRUE(explorer.started());
    ASSERT_TRUE(explorer.wait_until_stopped()) << read_file(output);
    explorer.signal(signal);
    explorer.signal(SIGCONT);
    EXPECT_EQ(explorer.wait(), 4) << read_file(output);
    const std::string out = read_file(output);
    EXPECT_NE(out.find(fmt::format("explorer: interrupted by {} at depth 3: {} states explored, complete to depth 2; "
                                   "the report covers what was explored; --resume '{}' continues from layer 2\n",
                                   name, explored, d)),
              std::string::npos)
        << out;
    EXPECT_NE(out.find("interrupted (SIGINT or SIGTERM) while expanding depth 3: complete to depth 2 only"),
              std::string::npos)
        << out;
    // The layers it completed are the uninterrupted search's.
    const std::string layers = uninterrupted.out.substr(0, uninterrupted.out.find("\n3  "));
    EXPECT_NE(out.find(layers), std::string::npos) << out;
    EXPECT_EQ(manifest_layer(d), 2);
    const ExplorerRun resumed = explorer_run(search + " --resume " + d);
    EXPECT_EQ(resumed.status, 1) << resumed.out;
    const std::string resumed_report = resumed.out.substr(resumed.out.find('\n') + 1);
    EXPECT_EQ(without_totals(resumed_report), without_totals(uninterrupted.out));
  }
}

// The same signal twice at once is one request: GNU timeout sends its signal to the process and
// then to its process group, which holds the process too. A search under `timeout -s TERM` still
// stops before its next parent and reports (the second signal killed it before, with nothing
// printed). timeout's own status says it timed out.
TEST_F(Snapshots, ASearchUnderTimeoutStillReports) {
  const auto r = test_support::run_command(std::string("timeout -s TERM 1 ") + FP8SM_EXPLORER +
                                           " --depth 8 --check I1 --threads 2 2>&1");
  EXPECT_EQ(r.status, 124) << r.out;
  EXPECT_NE(r.out.find("explorer: interrupted by SIGTERM at depth "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("not violated in what was explored (incomplete search): I1"), std::string::npos) << r.out;
}

// A signal at any moment of a long layer stops the search there: SIGTERM once the snapshot of
// layer 4 of a depth-6 search is in place, while layers 5 and 6 (seconds more) are expanded.
TEST_F(Snapshots, ASignalDuringALongLayerStopsTheSearchThere) {
  const std::string d = dir("d6");
  const std::string output = dir("d6.out");
  ExplorerProcess explorer({"--depth", "6", "--check", "I1", "--snapshot", d}, output);
  ASSERT_TRUE(explorer.started());
  int status = -1;
  while (manifest_layer(d) < 4) {
    ASSERT_FALSE(explorer.ended(status)) << "it ended (" << status << ") before layer 4 was saved: " << read_file(output);
    ::usleep(2000);
  }
  explorer.signal(SIGTERM);
  EXPECT_EQ(explorer.wait(), 4) << read_file(output);
  const std::string out = read_file(output);
  EXPECT_NE(out.find("explorer: interrupted by SIGTERM at depth "), std::string::npos) << out;
  EXPECT_NE(out.find("interrupted (SIGINT or SIGTERM) while expanding depth "), std::string::npos) << out;
  EXPECT_NE(out.find("not violated in what was explored (incomplete search): I1"), std::string::npos) << out;
  const int layer = manifest_layer(d);
  EXPECT_TRUE(layer == 4 || layer == 5) << layer;
  EXPECT_NE(out.find(fmt::format("; --resume '{}' continues from layer {}\n", d, layer)), std::string::npos) << out;
}

class RefusedSnapshots : public Snapshots {
 protected:
  void SetUp() override {
    snapshot_ = dir("s");
    ASSERT_EQ(explorer_run(kSearch + " --snapshot " + snapshot_).status, 0);
    rank_file_ = explorer::rank_file(snapshot_, 3, 0, 1);
    ASSERT_TRUE(fs::exists(rank_file_));
  }
  // Resumes with `options` and expects exit 2 with one line containing `reason`.
  void expect_refused(const std::string& options, const std::string& reason) {
    const ExplorerRun run = explorer_run(options + " --resume " + snapshot_);
    EXPECT_EQ(run.status, 2) << run.out;
    EXPECT_NE(run.out.find(reason), std::string::npos) << run.out;
    EXPECT_EQ(run.out.find('\n'), run.out.size() - 1) << "not one line: " << run.out;
    EXPECT_EQ(run.out.rfind("explorer: error: ", 0), 0u) << run.out;
  }
  const std::string kSearch = "--depth 4 --semantics fp8sm";
  std::string snapshot_;
  std::string rank_file_;
};

TEST_F(RefusedSnapshots, ACorruptFileIsRefused) {
  std::string bytes = read_file(rank_file_);
  bytes[bytes.size() / 2] = static_cast<char>(bytes[bytes.size() / 2] ^ 0x10);
  write_file(rank_file_, bytes);
  expect_refused(kSearch, "is corrupt: its checksum is");
}

TEST_F(RefusedSnapshots, ATruncatedFileIsRefused) {
  const std::string bytes = read_file(rank_file_);
  write_file(rank_file_, bytes.substr(0, bytes.size() - 100));
  expect_refused(kSearch, "is truncated");
}

TEST_F(RefusedSnapshots, AMissingFileIsRefused) {
  fs::remove(rank_file_);
  expect_refused(kSearch, "cannot read '" + rank_file_ + "'");
}

TEST_F(RefusedSnapshots, AFileOfAnotherSnapshotIsRefused) {
  const std::string other = dir("other");
  ASSERT_EQ(explorer_run(kSearch + " --coverage --snapshot " + other).status, 0);
  fs::copy_file(explorer::rank_file(other, 3, 0, 1), rank_file_, fs::copy_options::overwrite_existing);
  expect_refused(kSearch, "is of another search: it has coverage=on, this run coverage=off");
}

// A directory where a rank's file should be is said to be one, not "truncated".
TEST_F(RefusedSnapshots, ADirectoryInPlaceOfARankFileIsRefusedAsSuch) {
  fs::remove(rank_file_);
  fs::create_directory(rank_file_);
  expect_refused(kSearch, "'" + rank_file_ + "' is a directory, not a snapshot file");
}

// The manifest is its lines and its checksum line, last: anything after it is damage.
TEST_F(RefusedSnapshots, AManifestWithATrailingLineIsRefused) {
  const std::string text = read_file(snapshot_ + "/manifest");
  for (const std::string& extra : {std::string("layer 4\n"), std::string("\n"), std::string("x")}) {
    SCOPED_TRACE(extra);
    write_file(snapshot_ + "/manifest", text + extra);
    expect_refused(kSearch, "manifest' is corrupt: text after its checksum line");
  }
  // And a line the checksum covers that the manifest does not have (made by hand).
  std::string lines = text.substr(0, text.rfind("checksum "));
  lines += "rank 1 checksum 0123456789abcdef\n";
  const std::string checksum = fmt::format("{:016x}", XXH64(lines.data(), lines.size(), 0));
  write_file(snapshot_ + "/manifest", lines + "checksum " + checksum + "\n");
  expect_refused(kSearch, "manifest' is corrupt: a line after the ranks' checksums");
}

// --resume DIR of a DIR that does not exist is refused, and does not make it.
TEST_F(Snapshots, ResumingADirectoryThatDoesNotExistMakesNone) {
  const std::string missing = dir("missing");
  const ExplorerRun run = explorer_run("--depth 4 --resume " + missing);
  EXPECT_EQ(run.status, 2) << run.out;
  EXPECT_EQ(run.out, "explorer: error: '" + missing + "' holds no snapshot to resume: there is no such directory\n");
  EXPECT_FALSE(fs::exists(missing));
}

// "resumed from layer D" is said when the search starts from it, not when it ends: here the
// resumed search stops itself (SIGSTOP) after saving layer 4, and the line is already there.
TEST_F(Snapshots, AResumedSearchSaysSoWhenItStarts) {
  const std::string d = dir("s");
  ASSERT_EQ(explorer_run("--depth 6 --check I1 --snapshot " + d, "FP8SM_TEST_FAULT='kill manifest-written 3'").status,
            128 + 9);
  const std::string output = dir("resumed.out");
  ExplorerProcess explorer({"--depth", "6", "--check", "I1", "--resume", d}, output, "stop manifest-written 4");
  ASSERT_TRUE(explorer.wait_until_stopped()) << read_file(output);
  EXPECT_EQ(read_file(output), "explorer: resumed from layer 3 of the snapshot in '" + d + "'\n");
  explorer.signal(SIGTERM);  // the rest of the search is not this test's
  explorer.signal(SIGCONT);
  EXPECT_EQ(explorer.wait(), 4);
}

TEST_F(RefusedSnapshots, ADamagedManifestIsRefused) {
  std::string text = read_file(snapshot_ + "/manifest");
  text[text.find("layer 3")] = 'L';
  write_file(snapshot_ + "/manifest", text);
  expect_refused(kSearch, "manifest' is corrupt: its checksum does not match its text");
}

TEST_F(RefusedSnapshots, NoManifestIsNoSnapshot) {
  fs::remove(snapshot_ + "/manifest");
  expect_refused(kSearch, "holds no snapshot to resume (no manifest)");
}

TEST_F(RefusedSnapshots, OtherOptionsAreRefused) {
  expect_refused("--depth 4 --semantics upstream", "it has semantics=fp8sm, this run semantics=upstream");
  expect_refused("--depth 5 --semantics fp8sm", "it has depth=4, this run depth=5");
  expect_refused(kSearch + " --modules 3", "it has modules=2, this run modules=3");
  expect_refused(kSearch + " --no-symmetry", "it has symmetry=on, this run symmetry=off");
  expect_refused(kSearch + " --data-inputs", "it has data-inputs=off, this run data-inputs=on");
  expect_refused(kSearch + " --no-canonical-ids", "it has canonical-ids=on, this run canonical-ids=off");
  expect_refused(kSearch + " --check I1", "it has check=I1,I2,I3,I4,I5,I6,I7,I8,I9, this run check=I1");
  // What does not decide the search's states may change: threads and budgets.
  const ExplorerRun run = explorer_run(kSearch + " --threads 2 --max-states 100000000 --resume " + snapshot_);
  EXPECT_EQ(run.status, 0) << run.out;
}

TEST_F(RefusedSnapshots, AnotherVersionOrBuildIsRefused) {
  rewrite_manifest_line(snapshot_, "version", "fp8sm 0.0.9, snapshot format 1");
  expect_refused(kSearch, "was written by fp8sm 0.0.9, snapshot format 1; this is fp8sm ");
  ASSERT_EQ(explorer_run(kSearch + " --snapshot " + dir("again")).status, 0);
  snapshot_ = dir("again");
  rewrite_manifest_line(snapshot_, "model", "0123456789abcdef");
  expect_refused(kSearch, "was written by another build of the model (model 0123456789abcdef");
}

TEST_F(RefusedSnapshots, AnotherNumberOfRanksIsRefused) {
  SearchOptions o = test_support::search_options(Semantics::Fp8sm, 4);
  snapshot_ = o.snapshot_dir = dir("two");
  explorer::ThreadRanks::run(2, [&](explorer::Ranks& ranks) { explorer::search(o, ranks); });
  expect_refused(kSearch, "was written by 2 ranks; this run has 1 (resume it with as many ranks)");
}

TEST_F(RefusedSnapshots, ASnapshotIsNotOverwrittenByANewSearch) {
  const ExplorerRun run = explorer_run(kSearch + " --snapshot " + snapshot_);
  EXPECT_EQ(run.status, 2) << run.out;
  EXPECT_NE(run.out.find("already holds a snapshot (of layer 3): resume it with --resume, or give an empty directory"),
            std::string::npos)
      << run.out;
  const ExplorerRun both = explorer_run(kSearch + " --snapshot " + dir("elsewhere") + " --resume " + snapshot_);
  EXPECT_EQ(both.status, 2) << both.out;
  EXPECT_NE(both.out.find("--resume continues in the directory it reads"), std::string::npos) << both.out;
}

TEST_F(RefusedSnapshots, ASnapshotDirectoryThatCannotBeMadeIsRefused) {
  const ExplorerRun run = explorer_run(kSearch + " --snapshot " + dir("missing/parent"));
  EXPECT_EQ(run.status, 2) << run.out;
  EXPECT_NE(run.out.find("cannot make the snapshot directory"), std::string::npos) << run.out;
}

}  // namespace
}  // namespace fp8sm
