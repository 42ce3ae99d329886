// The train_mlp example as a user runs it: bad options are exit status 2 with one "error:" line
// on standard error and nothing on standard output; a GPU backend where there is no GPU says so.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "../run_command.hpp"
#include "../temporary_directory.hpp"

#ifdef FP8SM_HAVE_CUDA
#include "runtime/cuda_backend.hpp"
#endif

namespace {

struct Result {
  int status = -1;
  std::string out;  // standard output
  std::string err;  // standard error
};

Result train_mlp(const std::string& args) {
  const fp8sm::test_support::TemporaryDirectory temporary;
  const std::string err_path = temporary.file("stderr");
  const auto run = fp8sm::test_support::run_command(std::string(FP8SM_TRAIN_MLP) + " " + args + " 2>" + err_path);
  Result result{run.status, run.out, ""};
  std::ifstream err(err_path);
  std::stringstream text;
  text << err.rdbuf();
  result.err = text.str();
  return result;
}

TEST(TrainMlpCli, BadOptionsAreExitTwoWithNothingOnStandardOutput) {
  for (const char* args : {"--backend bogus", "--steps 0", "--checkpoint sideways", "--semantics legacy", "--bogus",
                           "--granularity everything", "--steps -1", "--steps 0x3", "--steps ''", "--steps 99999999999"}) {
    const Result r = train_mlp(args);
    EXPECT_EQ(r.status, 2) << args << ": " << r.err;
    EXPECT_EQ(r.out, "") << args;
    EXPECT_EQ(r.err.rfind("train_mlp: error: ", 0), 0u) << args << ": " << r.err;
  }
}

// --granularity places checkpoints: without one it would be ignored, so it is refused.
TEST(TrainMlpCli, AGranularityWithoutACheckpointIsRefused) {
  for (const char* args : {"--granularity nested", "--checkpoint none --granularity per-layer"}) {
    const Result r = train_mlp(args);
    EXPECT_EQ(r.status, 2) << args << ": " << r.err;
    EXPECT_EQ(r.out, "") << args;
    EXPECT_NE(r.err.find("--granularity places checkpoints"), std::string::npos) << args << ": " << r.err;
  }
}

TEST(TrainMlpCli, TrainsAndReportsOneOneUnderFp8sm) {
  const Result r = train_mlp("--steps 2 --checkpoint nonreentrant --granularity nested");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("0  "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  1  1\n"), std::string::npos) << r.out;
}

#ifdef FP8SM_HAVE_CUDA
// Where no GPU is usable the message says that there is none (not only the CUDA runtime's
// words), before anything is printed on standard output. On a GPU machine this runs instead.
TEST(TrainMlpCli, AGpuBackendWithoutAGpuSaysThereIsNone) {
  const std::string why = fp8sm::runtime::cuda_unavailable_reason();
  if (why.empty()) GTEST_SKIP() << "a GPU is usable here";
  const Result r = train_mlp("--backend cuda --steps 1");
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("train_mlp: error: backend cuda: no usable CUDA device"), std::string::npos) << r.err;
  const bool says_no_gpu = r.err.find("no NVIDIA GPU") != std::string::npos ||
                           r.err.find("no GPU to use here") != std::string::npos ||
                           r.err.find("driver is older") != std::string::npos;
  EXPECT_TRUE(says_no_gpu) << r.err;
}
#endif

}  // namespace
