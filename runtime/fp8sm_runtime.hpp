// The fp8sm runtime: FP8 delayed scaling driven by the state machine the explorer checks.
// One include for a training program (see context.hpp for a five-line example).
#pragma once

#include "runtime/context.hpp"       // Context, StepCounts, ModuleMeta
#include "runtime/errors.hpp"        // MisuseError, StateError
#include "runtime/linear.hpp"        // Linear
#include "runtime/recipe.hpp"        // Recipe, Fp8Format
#include "runtime/scopes.hpp"        // Autocast, NoGrad, checkpoint, relu
