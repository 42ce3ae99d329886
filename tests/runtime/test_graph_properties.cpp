// Checkpointing is transparent on graphs: a random network that is a graph (tensors read by
// several ops, ops reading several tensors: residual sums, an op reading one tensor twice) with
// checkpoints of both kinds around random sub-graphs of one or more inputs, nested any way,
// trains bit for bit as the same network without checkpoints under fp8sm, at one forward and
// one backward update a step.
//
// The model ≡ runtime property (test_runtime_properties) stays on chains: the scenario language
// has no values, each `linear` reads what the statement before it wrote, so it cannot say that
// an op reads two tensors or that a tensor has two readers. test_graph.cpp pins the graph rules
// down by hand-worked cases; this property checks that they compose.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "random_graphs.hpp"

namespace fp8sm {
namespace {

RC_GTEST_PROP(GraphProperties, CheckpointedGraphsTrainBitForBitAsWithout, ()) {
  using namespace test_support::graphs;
  const GraphCase c = draw_case();
  const Trained checkpointed = train(c.program, c.recipe, c.steps, c.seed, true);
  const Trained plain = train(c.program, c.recipe, c.steps, c.seed, false);
  RC_ASSERT(same_training(checkpointed, plain));
  // One forward update a step, at the autocast's exit, and one backward update, by the owner's
  // backward, wherever an FP8 module ran (spec §3.6, §5 I1); none backward without one.
  const int backward_expected = plain.metas.empty() ? 0 : 1;
  for (std::size_t s = 0; s < plain.counts.size(); ++s) {
    for (const runtime::StepCounts& counts : {checkpointed.counts[s], plain.counts[s]}) {
      RC_ASSERT(counts.forward_updates == 1);
      RC_ASSERT(counts.backward_updates == backward_expected);
    }
  }
}

}  // namespace
}  // namespace fp8sm
