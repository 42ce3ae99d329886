// The transformer example (examples/transformer.hpp) as the issue asks of it: under fp8sm every
// checkpointing of its blocks trains bit for bit as none, at one forward and one backward update
// a step; under upstream the checkpoints' recomputes update again, as the seed table measured on
// TE; the loss falls; and train_transformer's command line.
#include <fmt/core.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "../run_command.hpp"
#include "../temporary_directory.hpp"
#include "examples/transformer.hpp"

namespace fp8sm {
namespace {

using examples::BlockCheckpoint;
using examples::TransformerOptions;

TransformerOptions options(BlockCheckpoint checkpoint, spec::Semantics semantics, int steps) {
  TransformerOptions o;
  o.checkpoint = checkpoint;
  o.semantics = semantics;
  o.steps = steps;
  o.batch = 4;
  return o;
}

// Every value training leaves: the losses, the parameters, every FP8 module's histories and scales.
std::vector<float> everything(const examples::TransformerResult& r) {
  std::vector<float> all;
  for (const auto& step : r.steps) all.push_back(step.loss);
  all.insert(all.end(), r.parameters.begin(), r.parameters.end());
  for (const runtime::ModuleMeta& m : r.metas) {
    for (const kernels::ScalingMeta* meta : {&m.forward, &m.backward}) {
      all.insert(all.end(), meta->amax_history.begin(), meta->amax_history.end());
      all.insert(all.end(), meta->scale.begin(), meta->scale.end());
    }
  }
  return all;
}

TEST(Transformer, EveryCheckpointingTrainsBitForBitAsNoneAtOneUpdateEachUnderFp8sm) {
  const auto none = examples::train_transformer(options(BlockCheckpoint::None, spec::Semantics::Fp8sm, 3));
  for (BlockCheckpoint checkpoint : {BlockCheckpoint::None, BlockCheckpoint::Reentrant, BlockCheckpoint::NonReentrant,
                                     BlockCheckpoint::Nested}) {
    const auto result = examples::train_transformer(options(checkpoint, spec::Semantics::Fp8sm, 3));
    EXPECT_EQ(everything(result), everything(none)) << static_cast<int>(checkpoint);
    for (const auto& step : result.steps) {
      EXPECT_EQ(step.counts.forward_updates, 1) << static_cast<int>(checkpoint);
      EXPECT_EQ(step.counts.backward_updates, 1) << static_cast<int>(checkpoint);
    }
  }
}

// The seed table's rule on TE main: every checkpoint's recompute opens an FP8 region of its own
// that updates at its exit (forward 1 + the checkpoints: two blocks here); a non-reentrant
// recompute's backward is still the pass's one update, a reentrant one's modules update again.
TEST(Transformer, UpstreamUpdatesAgainAtEveryRecompute) {
  const TransformerOptions o = options(BlockCheckpoint::None, spec::Semantics::Upstream, 2);
  for (BlockCheckpoint checkpoint : {BlockCheckpoint::Reentrant, BlockCheckpoint::NonReentrant}) {
    TransformerOptions with = o;
    with.checkpoint = checkpoint;
    for (const auto& step : examples::train_transformer(with).steps) {
      EXPECT_EQ(step.counts.forward_updates, 1 + static_cast<int>(o.blocks)) << static_cast<int>(checkpoint);
      if (checkpoint == BlockCheckpoint::NonReentrant) {
        EXPECT_EQ(step.counts.backward_updates, 1);
      } else {
        EXPECT_GT(step.counts.backward_updates, 1);
      }
    }
  }
  for (const auto& step : examples::train_transformer(o).steps) {
    EXPECT_EQ(step.counts.forward_updates, 1);
    EXPECT_EQ(step.counts.backward_updates, 1);
  }
}

// On the CUDA kernels (host emulation) the transformer trains bit for bit as on the CPU, in
// every checkpointing: its FP8 Linears on the device, its other layers on the host.
TEST(Transformer, OnTheDeviceBackendItTrainsBitForBitAsOnTheCpu) {
  for (BlockCheckpoint checkpoint : {BlockCheckpoint::None, BlockCheckpoint::Reentrant, BlockCheckpoint::NonReentrant,
                                     BlockCheckpoint::Nested}) {
    TransformerOptions o = options(checkpoint, spec::Semantics::Fp8sm, 2);
    o.width = 16;
    o.batch = 2;
    const auto cpu = examples::train_transformer(o);
    o.backend = "cuda-emulated";
    const auto device = examples::train_transformer(o);
    EXPECT_EQ(everything(device), everything(cpu)) << static_cast<int>(checkpoint);
  }
}

// And a step on the device copies only what the program feeds in and reads: the tokens, their
// positions and the targets (three uploads of indices), the loss's gradient seed (one upload)
// and the loss (one download); the first step also uploads each registry key's pointer arrays
// (3 for the forward key, 3 for the backward one).
TEST(Transformer, AStepOnTheDeviceCopiesOnlyItsInputsAndTheLoss) {
  for (BlockCheckpoint checkpoint : {BlockCheckpoint::None, BlockCheckpoint::Reentrant, BlockCheckpoint::NonReentrant,
                                     BlockCheckpoint::Nested}) {
    TransformerOptions o = options(checkpoint, spec::Semantics::Fp8sm, 3);
    o.width = 16;
    o.batch = 2;
    o.backend = "cuda-emulated";
    for (const auto& step : examples::train_transformer(o).steps) {
      EXPECT_EQ(step.traffic.uploads, step.step == 0 ? 4u + 6u : 4u) << static_cast<int>(checkpoint) << " " << step.step;
      EXPECT_EQ(step.traffic.downloads, 1u) << static_cast<int>(checkpoint) << " " << step.step;
      EXPECT_EQ(step.traffic.download_bytes, sizeof(float)) << static_cast<int>(checkpoint) << " " << step.step;
    }
  }
}

TEST(Transformer, TheLossFalls) {
  TransformerOptions o = options(BlockCheckpoint::Nested, spec::Semantics::Fp8sm, 40);
  o.width = 32;
  const auto result = examples::train_transformer(o);
  float last = 0;
  for (int i = 35; i < 40; ++i) last += result.steps[static_cast<std::size_t>(i)].loss / 5.0f;
  // At the start, about ln(8): the answer's tokens are uniform over 8 values.
  EXPECT_GT(result.steps.front().loss, 1.5f);
  EXPECT_LT(last, 0.5f * result.steps.front().loss);
}

TEST(Transformer, OptionsItCannotTrainWithAreRefused) {
  TransformerOptions o = options(BlockCheckpoint::None, spec::Semantics::Fp8sm, 1);
  o.vocabulary = 1;
  EXPECT_THROW(examples::train_transformer(o), std::invalid_argument);
  EXPECT_THROW(examples::parse_block_checkpoint("everywhere"), std::invalid_argument);
}

struct Result {
  int status = -1;
  std::string out, err;
};

Result train_transformer(const std::string& args) {
  const test_support::TemporaryDirectory temporary;
  const std::string err_path = temporary.file("stderr");
  const auto run = test_support::run_command(std::string(FP8SM_TRAIN_TRANSFORMER) + " " + args + " 2>" + err_path);
  std::ifstream err(err_path);
  std::stringstream text;
  text << err.rdbuf();
  return Result{run.status, run.out, text.str()};
}

TEST(TrainTransformerCli, BadOptionsAreExitTwoWithNothingOnStandardOutput) {
  for (const char* args : {"--backend bogus", "--steps 0", "--checkpoint sideways", "--semantics legacy", "--bogus",
                           "--task sort", "--width 0", "--width ''", "--width 0x40", "--steps 1e3"}) {
    const Result r = train_transformer(args);
    EXPECT_EQ(r.status, 2) << args << ": " << r.err;
    EXPECT_EQ(r.out, "") << args;
    EXPECT_EQ(r.err.rfind("train_transformer: error: ", 0), 0u) << args << ": " << r.err;
  }
}

// Negative and absurd sizes are refused before anything is allocated: -1 was read as 2^64 - 1
// and grew until the machine's memory was full, 10^8 sequences ended in std::bad_alloc after
// 19 GB. Within the bounds, sizes whose estimated memory is more than the machine has are
// refused too (a width of 65536 holds 2 x 12 x 2^32 weights, terabytes with Adam's moments).
TEST(TrainTransformerCli, NegativeAndAbsurdSizesAreRefusedBeforeAllocating) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--batch -1", "--batch: '-1' is not a count in decimal digits"},
      {"--width -1", "--width: '-1' is not a count in decimal digits"},
      {"--batch 100000000", "--batch: '100000000' is not 1 to 16777216"},
      {"--width 65536 --batch 1", "more than this machine's"},
      {"--width 4096 --batch 16777216", "more than this machine's"}};
  for (const auto& [args, words] : cases) {
    const Result r = train_transformer(args);
    EXPECT_EQ(r.status, 2) << args << ": " << r.err;
    EXPECT_EQ(r.out, "") << args;
    EXPECT_NE(r.err.find(words), std::string::npos) << args << ": " << r.err;
  }
}

TEST(TrainTransformerCli, PrintsEachStepsLossAndCounts) {
  const Result r = train_transformer("--steps 2 --checkpoint nested --task copy --width 32 --batch 2");
  EXPECT_EQ(r.status, 0) << r.err;
  std::istringstream lines(r.out);
  std::string line;
  std::getline(lines, line);
  EXPECT_EQ(line, "step  loss  forward_updates  backward_updates");
  for (int step = 0; step < 2; ++step) {
    std::getline(lines, line);
    EXPECT_EQ(line.rfind(fmt::format("{}  ", step), 0), 0u) << line;
    EXPECT_EQ(line.substr(line.size() - 6), "  1  1") << line;
  }
  std::getline(lines, line);
  EXPECT_EQ(line.rfind("loss ", 0), 0u) << line;
}

}  // namespace
}  // namespace fp8sm
