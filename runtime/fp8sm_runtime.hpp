// The fp8sm runtime: FP8 delayed scaling driven by the state machine the explorer checks.
// One include for a training program (see context.hpp for a five-line example).
#pragma once

#include "runtime/context.hpp"            // Context, Tensor, StepCounts, ModuleMeta
#include "runtime/embedding.hpp"          // Embedding
#include "runtime/errors.hpp"             // MisuseError, StateError
#include "runtime/layer_norm.hpp"         // LayerNorm
#include "runtime/layer_norm_linear.hpp"  // LayerNormLinear
#include "runtime/linear.hpp"             // Linear
#include "runtime/ops.hpp"                // relu, gelu, add, causal_attention, cross_entropy
#include "runtime/recipe.hpp"             // Recipe, Fp8Format
#include "runtime/scopes.hpp"             // Autocast, NoGrad, checkpoint
