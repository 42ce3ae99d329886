// A device backend keeps its tensors in device memory: a training step copies nothing between
// the host and the device but what the program feeds in and reads back, and all its work goes on
// the backend's one stream. Counted through the Device (kernels::cuda::Device::traffic, every
// upload and download it makes). Built twice: on the host emulation, which runs the launches a
// GPU would ("cuda-emulated", runs everywhere), and on the GPU ("cuda-exact", tests/gpu/ with
// FP8SM_TEST_ON_GPU: skipped, saying why, where no GPU is usable; the stream and key tests,
// which read the emulation's own records, only on the emulation).
//
// What train_mlp's step must copy, and why: its input batch (made on the host) and the loss's
// gradient (computed on the host from the prediction) go in, two uploads; the prediction comes
// back for the loss, one download and the one wait for the device. The first step also uploads
// each registry key's pointer arrays once (histories, scales, slot offsets: 3 arrays for the
// forward key and 3 for the backward one). Nothing else: every cast, GEMM, ReLU, gradient sum,
// SGD step, stash and restore of a meta, and update stays on the device.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "examples/mlp.hpp"
#include "kernels/cuda/device_buffer.hpp"
#include "kernels/cuda/host_emulation/emulated_device.hpp"
#include "runtime/amax_order.hpp"
#include "runtime/backends.hpp"
#ifdef FP8SM_TEST_ON_GPU
#include "runtime/cuda_backend.hpp"
#endif
#include "runtime/device_backend.hpp"
#include "runtime/fp8sm_runtime.hpp"

namespace fp8sm {
namespace {

#ifdef FP8SM_TEST_ON_GPU
const char* const kBackend = "cuda-exact";
#define FP8SM_REQUIRE_DEVICE()                                        \
  do {                                                               \
    const std::string why = runtime::cuda_unavailable_reason();      \
    if (!why.empty()) GTEST_SKIP() << why;                           \
  } while (false)
#else
const char* const kBackend = "cuda-emulated";
#define FP8SM_REQUIRE_DEVICE() \
  do {                         \
  } while (false)
#endif

using examples::CheckpointKind;
using examples::Granularity;
using runtime::Matrix;

examples::MlpOptions options(CheckpointKind kind, Granularity g, spec::Semantics semantics) {
  examples::MlpOptions o;
  o.checkpoint = kind;
  o.granularity = g;
  o.semantics = semantics;
  o.backend = kBackend;
  o.steps = 4;
  o.batch = 8;
  return o;
}

TEST(DeviceResidency, AStepCopiesOnlyItsInputsAndItsReadout) {
  FP8SM_REQUIRE_DEVICE();
  for (spec::Semantics semantics : {spec::Semantics::Fp8sm, spec::Semantics::Upstream}) {
    for (CheckpointKind kind : {CheckpointKind::None, CheckpointKind::Reentrant, CheckpointKind::NonReentrant}) {
      for (Granularity g : {Granularity::Single, Granularity::PerLayer, Granularity::Nested}) {
        const auto result = examples::train_mlp(options(kind, g, semantics));
        for (const examples::StepReport& step : result.steps) {
          const std::string label = fmt::format("{} checkpoint {} granularity {} step {}", spec::name(semantics),
                                                static_cast<int>(kind), static_cast<int>(g), step.step);
          EXPECT_EQ(step.traffic.uploads, step.step == 0 ? 2u + 6u : 2u) << label;
          EXPECT_EQ(step.traffic.downloads, 1u) << label;
          EXPECT_EQ(step.traffic.synchronizations, 1u) << label;
          EXPECT_EQ(step.traffic.download_bytes, 8u * sizeof(float)) << label;  // the batch's predictions
        }
      }
    }
  }
}

// A group that reduces on the host (MPI) takes each update's amaxes down and back up: two more
// copies an update, two updates a step. A group that reduces on the device takes none.
class HostGroupOfTwo final : public runtime::AmaxReductionGroup {
 public:
  int size() const override { return 2; }
  int rank() const override { return 0; }
  void all_reduce_max(std::vector<float>& amaxes) override { reduced.push_back(amaxes.size()); }
  std::string name() const override { return "a host group of two"; }
  std::vector<std::size_t> reduced;
};

class DeviceGroupOfTwo final : public runtime::AmaxReductionGroup, public runtime::DeviceAmaxReduction {
 public:
  int size() const override { return 2; }
  int rank() const override { return 0; }
  void all_reduce_max(std::vector<float>& /*amaxes*/) override { throw std::logic_error("the host path was taken"); }
  void all_reduce_max_on_device(kernels::cuda::Device& /*device*/, float* /*amaxes*/, std::size_t count,
                                void* /*stream*/) override {
    reduced.push_back(count);
  }
  std::string name() const override { return "a device group of two"; }
  std::vector<std::size_t> reduced;
};

template <class Group>
std::vector<runtime::Traffic> train_with(Group& group) {
  runtime::Recipe recipe;
  recipe.amax_history_len = 4;
  runtime::Context ctx(recipe, runtime::make_backend(kBackend), spec::Semantics::Fp8sm, &group);
  runtime::Linear l0(ctx, "L0", 8, 16, 1), l1(ctx, "L1", 16, 4, 2);
  std::vector<runtime::Traffic> steps;
  for (int step = 0; step < 3; ++step) {
    const runtime::Traffic before = ctx.backend().traffic();
    Matrix y;
    {
      runtime::Autocast fp8(ctx);
      y = l1.forward(runtime::relu(ctx, l0.forward(Matrix(4, 8, 0.5f + static_cast<float>(step)))));
    }
    ctx.backward(Matrix(4, 4, 0.25f));
    ctx.end_step();
    steps.push_back(runtime::since(before, ctx.backend().traffic()));
  }
  return steps;
}

TEST(DeviceResidency, OnlyAHostGroupsReductionCopiesTheAmaxes) {
  FP8SM_REQUIRE_DEVICE();
  HostGroupOfTwo host;
  const auto host_steps = train_with(host);
  DeviceGroupOfTwo device;
  const auto device_steps = train_with(device);
  // Forward key: 2 modules x 2 slots; backward key: 2 modules x 1 slot; one update each a step.
  EXPECT_EQ(host.reduced, (std::vector<std::size_t>{4, 2, 4, 2, 4, 2}));
  EXPECT_EQ(device.reduced, (std::vector<std::size_t>{4, 2, 4, 2, 4, 2}));
  for (std::size_t s = 1; s < 3; ++s) {
    // The input and the gradient seed, and with the host group each update's amaxes both ways.
    EXPECT_EQ(device_steps[s].uploads, 2u) << s;
    EXPECT_EQ(device_steps[s].downloads, 0u) << s;
    EXPECT_EQ(host_steps[s].uploads, 2u + 2u) << s;
    EXPECT_EQ(host_steps[s].downloads, 2u) << s;
    EXPECT_EQ(host_steps[s].download_bytes, (4u + 2u) * sizeof(float)) << s;
  }
}

#ifndef FP8SM_TEST_ON_GPU
// Every launch of a backend goes on its stream: the device refuses any other (so a training that
// completes named it every time), whether the backend made the stream or was given one.
TEST(DeviceResidency, EveryLaunchNamesTheBackendsStream) {
  auto device = std::make_unique<kernels::cuda::EmulatedDevice>();
  kernels::cuda::EmulatedDevice& d = *device;
  void* stream = d.create_stream();
  void* other = d.create_stream();
  {
    auto backend = runtime::make_device_backend(std::move(device), "cuda-emulated", stream);
    runtime::Context ctx(runtime::Recipe{}, std::move(backend));
    runtime::Linear l0(ctx, "L0", 8, 8, 1);
    Matrix y;
    {
      runtime::Autocast fp8(ctx);
      y = runtime::checkpoint(ctx, runtime::CheckpointMode::NonReentrant,
                              [&](const Matrix& x) { return runtime::relu(ctx, l0.forward(x)); }, Matrix(4, 8, 1.0f));
    }
    ctx.backward(Matrix(4, 8, 1.0f));
    EXPECT_EQ(ctx.end_step().backward_updates, 1);
    EXPECT_GT(d.launches("fp8sm_scale_update"), 0u);

    kernels::cuda::DeviceBuffer<float> x(d, 4, stream), out(d, 4, stream);
    EXPECT_THROW(d.relu(x.get(), 4, out.get(), other), std::logic_error);
    EXPECT_THROW(d.relu(x.get(), 4, out.get(), nullptr), std::logic_error);
    EXPECT_NO_THROW(d.relu(x.get(), 4, out.get(), stream));
  }
}

// Values enter a device backend checked: a NaN in an input is refused at the upload, with the
// same error as on the CPU, before any event.
#endif

TEST(DeviceResidency, ANonFiniteInputIsRefusedWhereItEntersTheDevice) {
  FP8SM_REQUIRE_DEVICE();
  runtime::Context ctx(runtime::Recipe{}, runtime::make_backend(kBackend));
  runtime::Linear l0(ctx, "L0", 2, 2, 1);
  Matrix x(1, 2, 1.0f);
  x.values[1] = std::nanf("");
  runtime::Autocast fp8(ctx);
  EXPECT_THROW(l0.forward(x), std::invalid_argument);
  // Before it: the module's forward and backward metas (a history and a scale each) and its weight.
  EXPECT_EQ(ctx.backend().traffic().uploads, 2u + 2u + 1u);
}

#ifndef FP8SM_TEST_ON_GPU
// The device's order keys (what the NCCL group reduces) are amax_order.hpp's, and come back.
TEST(DeviceResidency, TheDevicesOrderKeysAreTheReductionsOrder) {
  std::vector<float> amaxes = {0.0f, -0.0f, 1.0f, 3.4e38f, std::numeric_limits<float>::infinity(),
                               -std::numeric_limits<float>::infinity(), -2.0f, 1e-45f};
  for (std::uint32_t nan : {0x7FC00000u, 0xFFC00001u, 0x7F800001u, 0xFFFFFFFFu}) {
    float f;
    std::memcpy(&f, &nan, sizeof f);
    amaxes.push_back(f);
  }
  kernels::cuda::EmulatedDevice d;
  kernels::cuda::DeviceBuffer<float> on_device(d, amaxes);
  d.amax_to_order_keys(on_device.get(), amaxes.size());
  const std::vector<float> keys = on_device.download();
  for (std::size_t i = 0; i < amaxes.size(); ++i) {
    std::int32_t key;
    std::memcpy(&key, &keys[i], sizeof key);
    EXPECT_EQ(key, runtime::amax_order_key(amaxes[i])) << i;
  }
  d.amax_from_order_keys(on_device.get(), amaxes.size());
  const std::vector<float> back = on_device.download();
  for (std::size_t i = 0; i < amaxes.size(); ++i) {
    const float expected = runtime::amax_from_order_key(runtime::amax_order_key(amaxes[i]));
    std::uint32_t got_bits, expected_bits;
    std::memcpy(&got_bits, &back[i], sizeof got_bits);
    std::memcpy(&expected_bits, &expected, sizeof expected_bits);
    EXPECT_EQ(got_bits, expected_bits) << i;
  }
}

#endif

}  // namespace
}  // namespace fp8sm
