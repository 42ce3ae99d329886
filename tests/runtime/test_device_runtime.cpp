// The runtime on the CUDA kernels: train_mlp in every checkpoint configuration with the same
// counts as on the CPU and bit-identical training with the exact GEMM; on a GPU also the same
// loss curve within 2 % with cuBLASLt. Built twice: on the host emulation of
// the kernels ("cuda-emulated", test_device_runtime, runs everywhere) and on the GPU
// ("cuda-exact" / "cuda", test_cuda_runtime with FP8SM_TEST_ON_GPU: skipped, saying why, where
// no GPU is usable).
#include <gtest/gtest.h>

#include <cmath>

#include "examples/mlp.hpp"
#include "runtime/backends.hpp"
#ifdef FP8SM_TEST_ON_GPU
#include "runtime/cuda_backend.hpp"
#endif

namespace fp8sm {
namespace {

using examples::CheckpointKind;
using examples::Granularity;

#ifdef FP8SM_TEST_ON_GPU
const char* const kExactBackend = "cuda-exact";
#else
const char* const kExactBackend = "cuda-emulated";
#endif

class DeviceRuntimeTest : public ::testing::Test {
 protected:
  void SetUp() override {
#ifdef FP8SM_TEST_ON_GPU
    const std::string why = runtime::cuda_unavailable_reason();
    if (!why.empty()) GTEST_SKIP() << why;
#endif
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

TEST_F(DeviceRuntimeTest, ExactGemmTrainsBitForBitAsTheCpu) {
  for (CheckpointKind kind : {CheckpointKind::None, CheckpointKind::Reentrant, CheckpointKind::NonReentrant}) {
    for (Granularity g : {Granularity::Single, Granularity::PerLayer, Granularity::Nested}) {
      const auto cpu = examples::train_mlp(options(kind, g, "cpu", 10));
      const auto gpu = examples::train_mlp(options(kind, g, kExactBackend, 10));
      ASSERT_EQ(gpu.steps.size(), cpu.steps.size());
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

#ifdef FP8SM_TEST_ON_GPU
TEST_F(DeviceRuntimeTest, FastGemmKeepsTheCountsAndTheLossCurve) {
  const auto cpu = examples::train_mlp(options(CheckpointKind::Reentrant, Granularity::PerLayer, "cpu", 100));
  const auto gpu = examples::train_mlp(options(CheckpointKind::Reentrant, Granularity::PerLayer, "cuda", 100));
  ASSERT_EQ(gpu.steps.size(), cpu.steps.size());
  for (std::size_t s = 0; s < cpu.steps.size(); ++s) {
    EXPECT_EQ(gpu.steps[s].counts.forward_updates, 1);
    EXPECT_EQ(gpu.steps[s].counts.backward_updates, 1);
  }
  // cuBLASLt sums in its own order and precision (kernels/README.md); its small differences
  // flip FP8 roundings of later casts, and the flips compound: the weights part from the CPU's
  // step by step. So the curves agree to 2 % step by step only early on, and later as a curve,
  // the mean of every 10 steps. (On an H200, the first run of this test saw steps 80 to 98 of
  // batches of 16 differ by up to 4.8 %; train_mlp's 300 steps differed by up to 2.9 % a step
  // and 0.72 % over 10.)
  constexpr std::size_t kStepByStep = 50;
  constexpr std::size_t kWindow = 10;
  for (std::size_t s = 0; s < kStepByStep; ++s) {
    EXPECT_NEAR(gpu.steps[s].loss, cpu.steps[s].loss, 2e-2 * std::fabs(cpu.steps[s].loss) + 1e-6) << s;
  }
  for (std::size_t begin = 0; begin + kWindow <= cpu.steps.size(); begin += kWindow) {
    double cpu_sum = 0;
    double gpu_sum = 0;
    for (std::size_t s = begin; s < begin + kWindow; ++s) {
      cpu_sum += cpu.steps[s].loss;
      gpu_sum += gpu.steps[s].loss;
    }
    EXPECT_NEAR(gpu_sum / kWindow, cpu_sum / kWindow, 2e-2 * std::fabs(cpu_sum / kWindow)) << "steps from " << begin;
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
#endif

TEST(DeviceRuntime, BackendsByName) {
  EXPECT_EQ(runtime::make_backend("cuda-emulated")->name(), "cuda-emulated");
  EXPECT_EQ(runtime::make_backend("cpu")->name(), "cpu");
  EXPECT_THROW(runtime::make_backend("cuda-fast"), std::invalid_argument);
}

}  // namespace
}  // namespace fp8sm
