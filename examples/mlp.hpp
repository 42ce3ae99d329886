// A small MLP regression trained in FP8 with the runtime: three Linears with ReLUs between,
// one autocast around the forward, the checkpoint configuration of the seed table as an
// option. Shared by examples/train_mlp.cpp and the test that checks checkpointing is
// transparent.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "runtime/fp8sm_runtime.hpp"

namespace fp8sm::examples {

enum class CheckpointKind { None, Reentrant, NonReentrant };
enum class Granularity { Single, PerLayer, Nested };

struct MlpOptions {
  CheckpointKind checkpoint = CheckpointKind::None;
  Granularity granularity = Granularity::Single;
  spec::Semantics semantics = spec::Semantics::Fp8sm;
  std::string backend = "cpu";  // runtime::make_backend's names
  int steps = 300;
  std::size_t batch = 64;
  float learning_rate = 0.05f;
  runtime::Recipe recipe = [] {
    runtime::Recipe r;
    r.amax_history_len = 16;
    return r;
  }();
};

struct StepReport {
  int step = 0;
  float loss = 0;
  runtime::StepCounts counts;
  runtime::Traffic traffic;  // the step's copies between host and device (a device backend's)
};

struct MlpResult {
  std::vector<StepReport> steps;
  std::vector<runtime::Matrix> weights;           // per layer, at the end
  std::vector<runtime::ModuleMeta> metas;         // per layer, at the end (histories, scales)
};

// Trains and returns every step's loss and counts; `each_step` (if set) sees them as they come.
MlpResult train_mlp(const MlpOptions& options, const std::function<void(const StepReport&)>& each_step = {});

// "none", "reentrant", "nonreentrant"; "single", "per-layer", "nested". Throw
// std::invalid_argument for anything else.
CheckpointKind parse_checkpoint(const std::string& text);
Granularity parse_granularity(const std::string& text);

}  // namespace fp8sm::examples
