// A small decoder-only transformer trained in FP8 with the runtime's graph tape, on a task it
// makes itself: given a random sequence and a separator, emit the sequence again (copy) or
// reversed (reverse). Pre-LayerNorm blocks: h + out(attention(qkv(LN h))), then
// h + fc2(gelu(fc1(LN h))), where qkv and fc1 are LayerNormLinears and out and fc2 Linears, all
// FP8 under one autocast around the forward; a final LayerNormLinear gives the logits, and the
// loss is the cross-entropy of the answer's tokens. Each block may be checkpointed.
// Shared by examples/train_transformer.cpp and the tests that check checkpointing is transparent.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "runtime/fp8sm_runtime.hpp"

namespace fp8sm::examples {

// How each block is checkpointed: not at all; a reentrant or a non-reentrant checkpoint around
// it; a non-reentrant checkpoint around it with a reentrant one around its MLP inside.
enum class BlockCheckpoint { None, Reentrant, NonReentrant, Nested };

struct TransformerOptions {
  BlockCheckpoint checkpoint = BlockCheckpoint::None;
  spec::Semantics semantics = spec::Semantics::Fp8sm;
  std::string backend = "cpu";  // runtime::make_backend's names
  bool reverse = true;          // the task: reverse the sequence (else copy it)
  int steps = 200;
  std::size_t batch = 16;        // sequences a step
  std::size_t length = 6;        // tokens to copy or reverse
  std::size_t vocabulary = 8;    // their values; one more token is the separator
  std::size_t width = 64;
  std::size_t blocks = 2;
  float learning_rate = 3e-3f;   // Adam
  std::uint64_t seed = 1;
  runtime::Recipe recipe = [] {
    runtime::Recipe r;
    r.amax_history_len = 16;
    return r;
  }();
};

struct TransformerStep {
  int step = 0;
  float loss = 0;
  runtime::StepCounts counts;
  runtime::Traffic traffic;  // the step's copies between host and device (a device backend's)
};

struct TransformerResult {
  std::vector<TransformerStep> steps;
  std::vector<float> parameters;           // every parameter at the end, in a fixed order
  std::vector<runtime::ModuleMeta> metas;  // every FP8 module's, at the end (histories, scales)
};

// A training in progress, a step at a time (for benchmarks that look inside a step: the
// context's event log). train_transformer below is this, run for options.steps steps.
class TransformerTraining {
 public:
  // Throws std::invalid_argument for options it cannot train with (require_trainable).
  explicit TransformerTraining(const TransformerOptions& options);
  ~TransformerTraining();
  TransformerTraining(const TransformerTraining&) = delete;
  TransformerTraining& operator=(const TransformerTraining&) = delete;

  // One step: a new batch, forward, backward, Adam, end_step.
  TransformerStep step();
  runtime::Context& context();
  // FP8 Linear modules (each LayerNormLinear counts once).
  std::size_t fp8_modules() const;
  // Every parameter now, in a fixed order, and every FP8 module's meta.
  std::vector<float> parameters() const;
  std::vector<runtime::ModuleMeta> metas() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// An upper estimate of the bytes a training with `options` holds at once (parameters with their
// gradients, Adam's moments and FP8 copies; a step's saved activations and their gradients), in
// floating point so that absurd sizes do not wrap.
double estimated_memory_bytes(const TransformerOptions& options);
// std::invalid_argument, before anything is allocated, for options no training can run with: a
// size of 0, a vocabulary under 2, or sizes whose estimated memory is more than this machine's
// (physical) memory.
void require_trainable(const TransformerOptions& options);

// Trains and returns every step's loss and counts; `each_step` (if set) sees them as they come.
// Throws std::invalid_argument for options it cannot train with.
TransformerResult train_transformer(const TransformerOptions& options,
                                    const std::function<void(const TransformerStep&)>& each_step = {});

// "none", "reentrant", "nonreentrant", "nested"; std::invalid_argument for anything else.
BlockCheckpoint parse_block_checkpoint(const std::string& text);

}  // namespace fp8sm::examples
