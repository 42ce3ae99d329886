// The runtime on the CUDA backend: the same counts as on the CPU, bit-identical training with
// the exact GEMM, the same loss curve within the GEMM's tolerance with cuBLASLt, and checkpoint
// transparency. Skipped, saying why, where no GPU is usable.
#include <gtest/gtest.h>

#include <cmath>

#include "examples/mlp.hpp"
#include "runtime/backends.hpp"
#include "runtime/cuda_backend.hpp"

namespace fp8sm {
namespace {

using examples::CheckpointKind;
using examples::Granularity;

class CudaRuntimeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string why = runtime::cuda_unavailable_reason();
    if (!why.empty()) GTEST_SKIP() << why;
  }
};

examples::MlpOptions options(CheckpointKind kind, Granularity g, const std::string& backend, int steps) {
  examples::MlpOptions o;
  o.checkpoint = kind;
  o.granularity = g;
  o.backend = backend;
  o.steps = steps;
  o.batch = 16;
  return o;
}

TEST_F(CudaRuntimeTest, ExactGemmTrainsBitForBitAsTheCpu) {
  for (CheckpointKind kind : {CheckpointKind::None, CheckpointKind::Reentrant, CheckpointKind::NonReentrant}) {
    for (Granularity g : {Granularity::Single, Granularity::PerLayer, Granularity::Nested}) {
      const auto cpu = examples::train_mlp(options(kind, g, "cpu", 10));
      const auto gpu = examples::train_mlp(options(kind, g, "cuda-exact", 10));
      for (std::size_t s = 0; s < cpu.steps.size(); ++s) {
        EXPECT_EQ(gpu.steps[s].loss, cpu.steps[s].loss) << s;
        EXPECT_EQ(gpu.steps[s].counts.forward_updates, 1);
        EXPECT_EQ(gpu.steps[s].counts.backward_updates, 1);
      }
      for (std::size_t l = 0; l < cpu.weights.size(); ++l) {
        EXPECT_EQ(gpu.weights[l], cpu.weights[l]);
        EXPECT_EQ(gpu.metas[l].forward.scale, cpu.metas[l].forward.scale);
        EXPECT_EQ(gpu.metas[l].forward.amax_history, cpu.metas[l].forward.amax_history);
        EXPECT_EQ(gpu.metas[l].backward.amax_history, cpu.metas[l].backward.amax_history);
      }
    }
  }
}

TEST_F(CudaRuntimeTest, FastGemmKeepsTheCountsAndTheLossCurve) {
  const auto cpu = examples::train_mlp(options(CheckpointKind::Reentrant, Granularity::PerLayer, "cpu", 100));
  const auto gpu = examples::train_mlp(options(CheckpointKind::Reentrant, Granularity::PerLayer, "cuda", 100));
  for (std::size_t s = 0; s < cpu.steps.size(); ++s) {
    EXPECT_EQ(gpu.steps[s].counts.forward_updates, 1);
    EXPECT_EQ(gpu.steps[s].counts.backward_updates, 1);
    EXPECT_NEAR(gpu.steps[s].loss, cpu.steps[s].loss, 1e-3 * std::fabs(cpu.steps[s].loss) + 1e-6) << s;
  }
}

TEST(CudaRuntime, ACudaBackendWithoutAGpuSaysWhy) {
  const std::string why = runtime::cuda_unavailable_reason();
  if (why.empty()) GTEST_SKIP() << "a GPU is usable here";
  try {
    runtime::make_backend("cuda");
    ADD_FAILURE() << "a CUDA backend without a GPU";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace fp8sm
