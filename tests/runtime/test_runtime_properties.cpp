// Properties of the runtime, checked on random cases that RapidCheck shrinks to a minimal one:
// (a) a random program fires the same sequence of table events on the runtime as on the model,
//     each taking the same rows (so its guards held alike), and gives the same update counts,
//     escaped exceptions and final state-machine state, under every semantics;
// (b) checkpointing is transparent: any checkpoint arrangement of a random network trains bit
//     for bit as the same network without checkpoints (fp8sm), over several steps and recipes;
// (c) an exception raised at any point inside any scope leaves the runtime as the model (the
//     spec) says, and the steps after it work: (a)'s programs contain raise statements
//     anywhere, and (a) compares every step that follows.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <vector>

#include "random_programs.hpp"
#include "random_training.hpp"

namespace fp8sm {
namespace {

RC_GTEST_PROP(RuntimeProperties, RandomProgramsRunAsOnTheModel, ()) {
  test_support::check_program_on_runtime(test_support::random_program(), "cpu");
}

// ---- (b) transparency ------------------------------------------------------------------------

RC_GTEST_PROP(RuntimeProperties, CheckpointingIsTransparent, ()) {
  using namespace test_support;
  const TrainingCase c = random_training_case();
  const Trained checkpointed = train(c.widths, c.arrangement, c.recipe, c.steps, c.seed);
  const Trained plain = train(c.widths, Arrangement{std::vector<Wrap>(c.layers(), Wrap::None), Wrap::None}, c.recipe,
                              c.steps, c.seed);
  RC_ASSERT(same_training(checkpointed, plain));
}

}  // namespace
}  // namespace fp8sm
