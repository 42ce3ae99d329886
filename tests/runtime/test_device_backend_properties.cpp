// The runtime's device backend (runtime/device_backend*.cpp: construction, device memory, kernel
// launches and the FP8 metas) runs random programs as the model does, and trains any random
// network, chain or graph, checkpoint arrangement and recipe bit for bit as the CPU backend: on
// the host emulation of the kernels everywhere ("cuda-emulated"),
// and on the GPU too where one is usable ("cuda-exact"). Fewer cases than the other properties
// (the emulation runs one fiber per CUDA thread); RC_PARAMS sets the count (CMakeLists.txt).
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "random_graphs.hpp"
#include "random_programs.hpp"
#include "random_training.hpp"

namespace fp8sm {
namespace {

const std::vector<std::string>& device_backends() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n = {"cuda-emulated"};
    try {
      runtime::make_backend("cuda-exact");
      n.push_back("cuda-exact");
    } catch (const std::runtime_error&) {
      // no usable GPU (or no CUDA in this build): the emulation alone
    }
    return n;
  }();
  return names;
}

// Property (a) of test_runtime_properties on the device backends: random programs with
// checkpoints, raises and try blocks anywhere run as on the model.
RC_GTEST_PROP(DeviceBackendProperties, RandomProgramsRunAsOnTheModel, ()) {
  const spec::Program program = test_support::random_program();
  for (const std::string& backend : device_backends()) {
    RC_TAG(backend);
    test_support::check_program_on_runtime(program, backend);
  }
}

RC_GTEST_PROP(DeviceBackendProperties, TrainsBitForBitAsTheCpu, ()) {
  using namespace test_support;
  const TrainingCase c = random_training_case();
  const Trained cpu = train(c.widths, c.arrangement, c.recipe, c.steps, c.seed, "cpu");
  for (const std::string& backend : device_backends()) {
    RC_TAG(backend);
    const Trained device = train(c.widths, c.arrangement, c.recipe, c.steps, c.seed, backend);
    RC_ASSERT(same_training(device, cpu));
  }
}

// Random graph networks (random_graphs.hpp: residual sums, attention, LayerNorm,
// LayerNormLinear, checkpoints of sub-graphs) train on a device backend bit for bit as on the CPU:
// every layer's kernels, the gradient sums and the updates on the device.
RC_GTEST_PROP(DeviceBackendProperties, GraphsTrainBitForBitAsOnTheCpu, ()) {
  using namespace test_support::graphs;
  const GraphCase c = draw_case();
  const Trained cpu = train(c.program, c.recipe, c.steps, c.seed, true, "cpu");
  for (const std::string& backend : device_backends()) {
    RC_TAG(backend);
    RC_ASSERT(same_training(train(c.program, c.recipe, c.steps, c.seed, true, backend), cpu));
  }
}

// The property compares something: a training that differs (another seed) is told apart.
TEST(DeviceBackendProperties, SameTrainingTellsTrainingsApart) {
  using namespace test_support;
  const std::vector<std::size_t> widths = {4, 3};
  const Arrangement none{{Wrap::None}, Wrap::None};
  const Trained a = train(widths, none, runtime::Recipe{}, 2, 1, "cuda-emulated");
  EXPECT_TRUE(same_training(a, train(widths, none, runtime::Recipe{}, 2, 1, "cpu")));
  EXPECT_FALSE(same_training(a, train(widths, none, runtime::Recipe{}, 2, 2, "cpu")));
}

}  // namespace
}  // namespace fp8sm
