// Snapshots (--snapshot DIR, --resume DIR): a search resumed from any complete layer ends with
// the uninterrupted result, also after a kill -9 at any point of writing a snapshot; a corrupt,
// incomplete or mismatched snapshot is refused with exit 2 and one line saying why.
#include <gtest/gtest.h>
#include <xxhash.h>
#include <fmt/core.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>

#include "explorer/search.hpp"
#include "explorer/search_report.hpp"
#include "explorer/snapshot.hpp"
#include "explorer/thread_ranks.hpp"
#include "run_command.hpp"
#include "scenario_helpers.hpp"

namespace fp8sm {
namespace {

namespace fs = std::filesystem;
using explorer::SearchOptions;
using spec::Semantics;

// A directory of its own for each test, removed after it.
class Snapshots : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "fp8sm-snapshots-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    root_ = pattern;
  }
  void TearDown() override { fs::remove_all(root_); }
  std::string dir(const std::string& name) const { return (fs::path(root_) / name).string(); }

  std::string root_;
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
  char checksum[17];
  std::snprintf(checksum, sizeof checksum, "%016llx",
                static_cast<unsigned long long>(XXH64(text.data(), text.size(), 0)));
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

class RefusedSnapshots : public Snapshots {
 protected:
  void SetUp() override {
    Snapshots::SetUp();
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
