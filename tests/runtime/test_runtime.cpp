// The runtime as a training program uses it: update counts against the seed table measured on
// TE, checkpoint transparency of training under fp8sm, and misuse refused without a trace.
#include <fmt/core.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

#include "examples/mlp.hpp"
#include "scenario_on_runtime.hpp"
#include "spec/format.hpp"
#include "spec/scenario_parser.hpp"
#include "interpreter/interpreter.hpp"
#include "runtime/fp8sm_runtime.hpp"

namespace fp8sm {
namespace {

using examples::CheckpointKind;
using examples::Granularity;
using examples::MlpOptions;
using runtime::Matrix;

MlpOptions options(CheckpointKind kind, Granularity granularity, spec::Semantics semantics, int steps) {
  MlpOptions o;
  o.checkpoint = kind;
  o.granularity = granularity;
  o.semantics = semantics;
  o.steps = steps;
  o.batch = 16;
  return o;
}

// The seed's table (three Linears), measured on TE main: the runtime driven by the upstream
// table must count the same, every step.
struct SeedRow {
  CheckpointKind kind;
  Granularity granularity;
  int forward;
  int backward;
};

TEST(RuntimeCounts, UpstreamReproducesTheSeedTable) {
  for (const SeedRow& row : {SeedRow{CheckpointKind::None, Granularity::Single, 1, 1},
                             SeedRow{CheckpointKind::NonReentrant, Granularity::Single, 2, 1},
                             SeedRow{CheckpointKind::NonReentrant, Granularity::PerLayer, 4, 1},
                             SeedRow{CheckpointKind::Reentrant, Granularity::Single, 2, 3},
                             SeedRow{CheckpointKind::Reentrant, Granularity::PerLayer, 4, 3}}) {
    const auto result = examples::train_mlp(options(row.kind, row.granularity, spec::Semantics::Upstream, 3));
    for (const auto& step : result.steps) {
      EXPECT_EQ(step.counts.forward_updates, row.forward) << static_cast<int>(row.kind) << "/" << static_cast<int>(row.granularity);
      EXPECT_EQ(step.counts.backward_updates, row.backward) << static_cast<int>(row.kind) << "/" << static_cast<int>(row.granularity);
    }
  }
}

TEST(RuntimeCounts, Pr3213AndFp8smUpdateOnceEachWay) {
  for (spec::Semantics s : {spec::Semantics::Pr3213, spec::Semantics::Fp8sm}) {
    for (CheckpointKind kind : {CheckpointKind::None, CheckpointKind::Reentrant, CheckpointKind::NonReentrant}) {
      for (Granularity g : {Granularity::Single, Granularity::PerLayer, Granularity::Nested}) {
        for (const auto& step : examples::train_mlp(options(kind, g, s, 3)).steps) {
          EXPECT_EQ(step.counts.forward_updates, 1);
          EXPECT_EQ(step.counts.backward_updates, 1);
        }
      }
    }
  }
}

void expect_identical(const examples::MlpResult& a, const examples::MlpResult& b, const std::string& what) {
  ASSERT_EQ(a.steps.size(), b.steps.size());
  for (std::size_t i = 0; i < a.steps.size(); ++i) EXPECT_EQ(a.steps[i].loss, b.steps[i].loss) << what << " step " << i;
  ASSERT_EQ(a.weights.size(), b.weights.size());
  for (std::size_t l = 0; l < a.weights.size(); ++l) {
    EXPECT_EQ(a.weights[l], b.weights[l]) << what << " weights of layer " << l;
    EXPECT_EQ(a.metas[l].forward.amax_history, b.metas[l].forward.amax_history) << what << " layer " << l;
    EXPECT_EQ(a.metas[l].forward.scale, b.metas[l].forward.scale) << what << " layer " << l;
    EXPECT_EQ(a.metas[l].backward.amax_history, b.metas[l].backward.amax_history) << what << " layer " << l;
    EXPECT_EQ(a.metas[l].backward.scale, b.metas[l].backward.scale) << what << " layer " << l;
  }
}

bool identical(const examples::MlpResult& a, const examples::MlpResult& b) {
  for (std::size_t l = 0; l < a.weights.size(); ++l) {
    if (!(a.weights[l] == b.weights[l]) || a.metas[l].forward.scale != b.metas[l].forward.scale ||
        a.metas[l].forward.amax_history != b.metas[l].forward.amax_history) {
      return false;
    }
  }
  return true;
}

// Invariant I8 on real numbers: under fp8sm every checkpoint configuration trains bit for bit
// as the model without checkpoints (losses, weights, amax histories, scales).
TEST(RuntimeTransparency, TrainingWithAnyCheckpointingIsBitIdenticalToWithout) {
  const auto reference = examples::train_mlp(options(CheckpointKind::None, Granularity::Single, spec::Semantics::Fp8sm, 40));
  EXPECT_LT(reference.steps.back().loss, reference.steps.front().loss);  // it does train
  for (CheckpointKind kind : {CheckpointKind::Reentrant, CheckpointKind::NonReentrant}) {
    for (Granularity g : {Granularity::Single, Granularity::PerLayer, Granularity::Nested}) {
      expect_identical(examples::train_mlp(options(kind, g, spec::Semantics::Fp8sm, 40)), reference,
                       fmt::format("{}/{}", static_cast<int>(kind), static_cast<int>(g)));
    }
  }
}

// The same comparison can fail: the explorer finds pr3213 breaking I8 on nested reentrant
// checkpoints (spec §7 row 7), and upstream on every reentrant one; the runtime shows it in
// the numbers. (Upstream's duplicate forward update meets all-zero current slots, a no-op on
// the fused path; spec §6 says the unfused path shortens the window instead.)
TEST(RuntimeTransparency, TeSemanticsAreNotTransparentWhereTheExplorerSaysSo) {
  const auto plain = examples::train_mlp(options(CheckpointKind::None, Granularity::Single, spec::Semantics::Pr3213, 20));
  EXPECT_FALSE(identical(examples::train_mlp(options(CheckpointKind::Reentrant, Granularity::Nested, spec::Semantics::Pr3213, 20)), plain));
  auto unfused = [](MlpOptions o) {
    o.recipe.update_path = kernels::UpdatePath::Unfused;
    return o;
  };
  const auto upstream = examples::train_mlp(unfused(options(CheckpointKind::None, Granularity::Single, spec::Semantics::Upstream, 20)));
  EXPECT_FALSE(identical(examples::train_mlp(unfused(options(CheckpointKind::Reentrant, Granularity::Single, spec::Semantics::Upstream, 20))), upstream));
}

// ---- misuse ---------------------------------------------------------------------------------

struct Fixture {
  runtime::Context ctx{runtime::Recipe{}};
  runtime::Linear l0{ctx, "L0", 4, 4, 1};
  Matrix x = Matrix(2, 4, 0.5f);
};

template <class F>
std::string message_of(F&& f) {
  try {
    f();
  } catch (const runtime::MisuseError& e) {
    return e.what();
  }
  return "(no MisuseError)";
}

TEST(RuntimeMisuse, LeavingAScopeTwiceNamesItAndChangesNothing) {
  Fixture f;
  runtime::Autocast fp8(f.ctx);
  fp8.close();
  const std::string before = f.ctx.machine().snapshot();
  EXPECT_NE(message_of([&] { fp8.close(); }).find("autocast scope #0 left twice"), std::string::npos);
  EXPECT_EQ(f.ctx.machine().snapshot(), before);
}

TEST(RuntimeMisuse, LeavingAScopeOutOfOrderNamesBoth) {
  Fixture f;
  runtime::Autocast outer(f.ctx);
  runtime::NoGrad inner(f.ctx);
  const std::string before = f.ctx.machine().snapshot();
  const std::string message = message_of([&] { outer.close(); });
  EXPECT_NE(message.find("autocast scope #0 left out of order"), std::string::npos) << message;
  EXPECT_NE(message.find("no_grad scope #1"), std::string::npos) << message;
  EXPECT_EQ(f.ctx.machine().snapshot(), before);
  inner.close();
  outer.close();
  EXPECT_EQ(f.ctx.autocast_depth(), 0);
}

TEST(RuntimeMisuse, AModuleTwiceInOneRegionWithReduceAmax) {
  Fixture f;
  runtime::Autocast fp8(f.ctx);
  f.l0.forward(f.x);
  const std::string before = f.ctx.machine().snapshot();
  const auto history = f.l0.meta().forward.amax_history;
  const std::string message = message_of([&] { f.l0.forward(f.x); });
  EXPECT_NE(message.find("module 'L0' ran twice in one FP8 autocast region while reduce_amax is set"), std::string::npos)
      << message;
  EXPECT_EQ(f.ctx.machine().snapshot(), before);
  EXPECT_EQ(f.l0.meta().forward.amax_history, history);
}

TEST(RuntimeMisuse, AModuleTwiceIsFineWithoutReduceAmax) {
  runtime::Recipe recipe;
  recipe.reduce_amax = false;
  runtime::Context ctx(recipe);
  runtime::Linear l0(ctx, "L0", 4, 4);
  runtime::Autocast fp8(ctx);
  EXPECT_NO_THROW(l0.forward(l0.forward(Matrix(1, 4, 1.0f))));
}

// The language's backward over nothing (spec: an empty graph makes an empty pass, the chain's
// input requiring grad): the pass's brackets and nothing else, and the gradient passes through.
// After a backward without retain the next backward over the current graph is such a pass too.
TEST(RuntimeBackward, OverNothingIsAnEmptyPass) {
  Fixture f;
  std::vector<runtime::FiredEvent> events;
  f.ctx.log_events(&events);
  const Matrix grad(2, 4, 0.75f);
  EXPECT_EQ(f.ctx.backward(grad).values, grad.values);
  f.ctx.log_events(nullptr);
  ASSERT_EQ(events.size(), 4u);
  EXPECT_TRUE(std::holds_alternative<spec::BackwardPassBegin>(events[0].event));
  EXPECT_TRUE(std::holds_alternative<spec::GradPush>(events[1].event));
  EXPECT_TRUE(std::holds_alternative<spec::GradPop>(events[2].event));
  EXPECT_TRUE(std::holds_alternative<spec::BackwardPassEnd>(events[3].event));
  {
    runtime::Autocast fp8(f.ctx);
    f.l0.forward(f.x);
  }
  f.ctx.backward(Matrix(2, 4, 1.0f));
  EXPECT_FALSE(f.ctx.has_recorded());
  EXPECT_EQ(f.ctx.backward(grad).values, grad.values);
  EXPECT_EQ(f.ctx.end_step().backward_updates, 1);
}

// A recompute with nothing captured for it: under pr3213 a second backward through a retained
// reentrant checkpoint finds its capture consumed (spec §7 row 24: IndexError on TE); the error
// names the operation and the checkpoint. fp8sm keeps the capture for every recompute.
TEST(RuntimeMisuse, ARecomputeWithNothingCapturedNamesTheCheckpoint) {
  for (spec::Semantics semantics : {spec::Semantics::Pr3213, spec::Semantics::Fp8sm}) {
    runtime::Context ctx(runtime::Recipe{}, runtime::make_cpu_backend(), semantics);
    runtime::Linear l0(ctx, "L0", 4, 4, 1);
    {
      runtime::Autocast fp8(ctx);
      runtime::checkpoint(ctx, runtime::CheckpointMode::Reentrant, [&](const Matrix& h) { return l0.forward(h); },
                          Matrix(2, 4, 0.5f));
    }
    ctx.backward(Matrix(2, 4, 1.0f), /*retain_graph=*/true);
    if (semantics == spec::Semantics::Fp8sm) {
      EXPECT_NO_THROW(ctx.backward(Matrix(2, 4, 1.0f)));
      continue;
    }
    try {
      ctx.backward(Matrix(2, 4, 1.0f));
      ADD_FAILURE() << "no StateError";
    } catch (const runtime::StateError& e) {
      EXPECT_EQ(e.kind(), "IndexError") << e.what();
      EXPECT_NE(std::string(e.what()).find("while preparing the forward of module 'L0' in the recompute of checkpoint #0, "
                                           "under the pr3213 semantics"),
                std::string::npos)
          << e.what();
    }
  }
}

TEST(RuntimeMisuse, EndingAStepInsideAScope) {
  Fixture f;
  runtime::Autocast fp8(f.ctx);
  EXPECT_NE(message_of([&] { f.ctx.end_step(); }).find("autocast scope #0 is still open"), std::string::npos);
}

TEST(RuntimeMisuse, NanAndInfinityAreRefusedBeforeAnyEvent) {
  Fixture f;
  runtime::Autocast fp8(f.ctx);
  const std::string before = f.ctx.machine().snapshot();
  Matrix bad = f.x;
  bad.at(1, 2) = std::numeric_limits<float>::quiet_NaN();
  EXPECT_THROW(f.l0.forward(bad), std::invalid_argument);
  bad.at(1, 2) = std::numeric_limits<float>::infinity();
  try {
    f.l0.forward(bad);
    ADD_FAILURE() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("Linear L0: input: infinity at (1, 2)"), std::string::npos) << e.what();
  }
  EXPECT_EQ(f.ctx.machine().snapshot(), before);
  EXPECT_TRUE(f.ctx.registry().empty());
}

TEST(RuntimeMisuse, BadShapesAndRecipes) {
  Fixture f;
  EXPECT_THROW(f.l0.forward(Matrix(2, 3)), std::invalid_argument);
  runtime::Recipe recipe;
  recipe.margin = -1;
  EXPECT_THROW(runtime::Context{recipe}, std::invalid_argument);
}

// ---- exceptions inside scopes -------------------------------------------------------------

struct UserError : std::runtime_error {
  UserError() : std::runtime_error("user error") {}
};

// An exception thrown inside autocast and checkpoint scopes leaves every scope, and leaves the
// state machine exactly where the model leaves it for the same program (spec §3.7): the
// scenario language's `raise always` at the same place. The next step then trains with 1/1.
TEST(RuntimeExceptions, AFailedStepLeavesTheMachineWhereTheModelDoes) {
  for (spec::Semantics semantics : spec::kAllSemantics) {
    for (runtime::CheckpointMode mode : {runtime::CheckpointMode::Reentrant, runtime::CheckpointMode::NonReentrant}) {
      const std::string block = mode == runtime::CheckpointMode::Reentrant ? "checkpoint reentrant" : "checkpoint nonreentrant";
      const spec::Program program = spec::parse_scenario(
          "autocast on {\n  " + block + " {\n    linear L0\n    linear L1\n  }\n}\nbackward\nstep\n"
          "autocast on {\n  " + block + " {\n    linear L0\n    raise always\n    linear L1\n  }\n}\nbackward\nstep\n"
          "autocast on {\n  " + block + " {\n    linear L0\n    linear L1\n  }\n}\nbackward\n");
      interpreter::Interpreter model(semantics, nullptr);
      model.run(program);

      runtime::Context ctx(runtime::Recipe{}, runtime::make_cpu_backend(), semantics);
      runtime::Linear l0(ctx, "L0", 4, 4, 1), l1(ctx, "L1", 4, 4, 2);
      const Matrix x(2, 4, 0.25f);
      std::vector<runtime::StepCounts> counts;
      std::vector<std::string> raised;
      auto run_step = [&](bool fail) {
        try {
          {
            runtime::Autocast fp8(ctx);
            runtime::checkpoint(ctx, mode, [&](const Matrix& h) {
              const Matrix y = l0.forward(h);
              if (fail) throw UserError();
              return l1.forward(y);
            }, x);
          }
          ctx.backward(Matrix(2, 4, 1.0f));
        } catch (const UserError&) {
          raised.push_back("UserError");
        } catch (const runtime::StateError& e) {
          raised.push_back(e.kind());
        }
        counts.push_back(ctx.end_step());
      };
      run_step(false);
      run_step(true);
      EXPECT_EQ(ctx.autocast_depth(), 0);
      EXPECT_TRUE(ctx.grad_enabled());
      run_step(false);

      const std::string what = fmt::format("{} {}", semantics, block);
      ASSERT_EQ(model.steps().size(), counts.size()) << what;
      std::vector<std::string> model_raised;
      for (std::size_t i = 0; i < counts.size(); ++i) {
        EXPECT_EQ(counts[i].forward_updates, model.steps()[i].forward_updates) << what << " step " << i;
        EXPECT_EQ(counts[i].backward_updates, model.steps()[i].backward_updates) << what << " step " << i;
        for (const auto& e : model.steps()[i].raised) model_raised.push_back(spec::name(e.kind));
      }
      EXPECT_EQ(raised, model_raised) << what;
      EXPECT_EQ(ctx.machine().snapshot(), model.machine().snapshot()) << what;
      if (semantics == spec::Semantics::Fp8sm) {
        EXPECT_EQ(counts.back().forward_updates, 1);
        EXPECT_EQ(counts.back().backward_updates, 1);
      }
    }
  }
}

// ---- the property tests' shrunk counterexamples, kept ----------------------------------------

// Runs `text` on the model and on the runtime; they must agree on counts, escaped exceptions
// and the final machine state.
void expect_runtime_as_model(const std::string& text, spec::Semantics semantics) {
  const spec::Program program = spec::parse_scenario(text);
  interpreter::Interpreter model(semantics, nullptr);
  model.run(program);
  runtime::Recipe recipe;
  recipe.reduce_amax = false;
  test_support::ScenarioOnRuntime on_runtime(semantics, recipe, 3);
  const test_support::RuntimeRun run = on_runtime.run(program);
  ASSERT_EQ(run.counts.size(), model.steps().size());
  for (std::size_t i = 0; i < run.counts.size(); ++i) {
    EXPECT_EQ(run.counts[i].forward_updates, model.steps()[i].forward_updates) << i;
    EXPECT_EQ(run.counts[i].backward_updates, model.steps()[i].backward_updates) << i;
  }
  EXPECT_EQ(run.machine_snapshot, model.machine().snapshot());
}

// A pass without retain whose reentrant recompute raised releases the checkpoint (the model's
// CheckpointReleased), yet torch keeps what the checkpoint's node saved, since its backward
// never completed: a second pass recomputes it again. The runtime had freed the checkpoint's
// function at the release and failed there (found by the trace property).
TEST(RuntimeRegressions, ACheckpointReleasedByAFailedPassStillRecomputes) {
  for (spec::Semantics s : spec::kAllSemantics) {
    expect_runtime_as_model(
        "checkpoint reentrant {\n  raise recompute\n}\nsave A\ntry {\n  backward A\n}\nbackward A\n", s);
  }
}

// A `try` inside a recompute discarded against the main graph's mark instead of the
// recompute's own graph, dropping what the recompute had recorded before the `try`.
TEST(RuntimeRegressions, TryInsideARecomputeDiscardsOnlyItsOwnBody) {
  for (spec::Semantics s : spec::kAllSemantics) {
    expect_runtime_as_model(
        "checkpoint reentrant {\n  checkpoint nonreentrant {\n    linear L0\n    try {\n      raise always\n    }\n  }\n}\n"
        "autocast on {\n  backward\n}\n",
        s);
  }
}

// Under upstream a non-reentrant recompute inside a backward that runs under an enabled
// autocast casts in another precision than its forward did: the node must backpropagate from
// what the recompute saved (this crashed).
TEST(RuntimeRegressions, ARecomputeInAnotherPrecisionThanItsForward) {
  for (spec::Semantics s : spec::kAllSemantics) {
    expect_runtime_as_model(
        "checkpoint nonreentrant {\n  linear L2\n}\nautocast on {\n  no_grad {\n    checkpoint nonreentrant {\n"
        "      linear L2\n    }\n    backward\n  }\n}\n",
        s);
  }
}

// Saved-tensor slots (spec §3.5) on the runtime as on the model: a recompute that saves more
// than its forward raises nothing (L0's first recomputed twin goes to the forward's L0); one
// that saves less raises IndexError at the unpack, after the recompute ran.
TEST(RuntimeCheckpointSlots, LongerAndShorterRecomputesAsTheModel) {
  for (spec::Semantics s : spec::kAllSemantics) {
    expect_runtime_as_model(
        "autocast on {\n  checkpoint nonreentrant {\n    try {\n      raise original\n      linear L0\n    }\n"
        "    linear L0\n  }\n}\nbackward\n",
        s);
    expect_runtime_as_model(
        "autocast on {\n  checkpoint nonreentrant {\n    try {\n      raise recompute\n      linear L0\n    }\n"
        "  }\n}\nbackward\n",
        s);
  }
}

// A recompute that records another module at a slot than the forward did: TE would hand L0's
// saved tensors to L1 (silently wrong, or a shape error later); the runtime refuses with
// CheckpointError, naming the checkpoint and the slot. (The model keeps no tensors and goes on:
// the property test discards such programs.)
TEST(RuntimeCheckpointSlots, AnotherModuleAtASlotIsACheckpointError) {
  runtime::Recipe recipe;
  recipe.reduce_amax = false;
  test_support::ScenarioOnRuntime on_runtime(spec::Semantics::Fp8sm, recipe, 3);
  const spec::Program program = spec::parse_scenario(
      "checkpoint nonreentrant {\n  try {\n    raise original\n    linear L0\n  }\n  linear L1\n}\nbackward\n");
  try {
    on_runtime.run(program);
    ADD_FAILURE() << "no error";
  } catch (const test_support::RuntimeRefused& e) {
    EXPECT_NE(std::string(e.what()).find("checkpoint #0 recorded another node at slot 0"), std::string::npos)
        << e.what();
  }
}

// Nested non-reentrant checkpoints (each frame recomputes alone, at a node of its own), a
// checkpoint of either kind inside a recompute, and retained graphs' second backwards
// (AttributeError through TE's Linear, TypeError for a taken slot; fp8sm runs both): the
// runtime as the model, for the corpus files that show them.
TEST(RuntimeCheckpointSlots, NestedFramesAndRetainedGraphsAsTheModel) {
  for (const char* file : {"edge-nested-nonreentrant-outer-without-nodes.scn", "edge-nested-nonreentrant-outer-with-nodes.scn",
                           "edge-checkpoint-inside-a-recompute.scn", "edge-nonreentrant-slot-taken-twice.scn",
                           "edge-linear-second-backward-of-a-retained-graph.scn"}) {
    std::ifstream in(std::string(FP8SM_SOURCE_DIR) + "/tests/scenarios/" + file);
    std::stringstream text;
    text << in.rdbuf();
    ASSERT_FALSE(text.str().empty()) << file;
    for (spec::Semantics s : spec::kAllSemantics) {
      SCOPED_TRACE(fmt::format("{} {}", file, s));
      expect_runtime_as_model(text.str(), s);
    }
  }
}

// The runtime's own nested frames, written as a program would: an outer checkpoint whose
// function calls an inner one. Training is bit for bit the same as without checkpoints under
// fp8sm (spec §5 I8), and only the inner frame recomputes when the outer records nothing.
TEST(RuntimeCheckpointSlots, NestedNonReentrantCheckpointsTrainAsWithout) {
  auto train = [](bool checkpointed) {
    runtime::Context ctx(runtime::Recipe{});
    runtime::Linear l0(ctx, "L0", 4, 8, 1), l1(ctx, "L1", 8, 4, 2);
    std::vector<float> trace;
    for (int step = 0; step < 3; ++step) {
      // The functions outlive the forward: backward calls them again (the recompute).
      auto inner = [&](const Matrix& h) { return l1.forward(runtime::relu(ctx, h)); };
      auto outer = [&](const Matrix& x) {
        const Matrix h = l0.forward(x);
        return checkpointed ? runtime::checkpoint(ctx, runtime::CheckpointMode::NonReentrant, inner, h) : inner(h);
      };
      Matrix y;
      {
        runtime::Autocast fp8(ctx);
        const Matrix x(3, 4, 0.5f + 0.1f * static_cast<float>(step));
        y = checkpointed ? runtime::checkpoint(ctx, runtime::CheckpointMode::NonReentrant, outer, x) : outer(x);
      }
      ctx.backward(Matrix(y.rows, y.cols, 1.0f));
      const runtime::StepCounts counts = ctx.end_step();
      EXPECT_EQ(counts.forward_updates, 1);
      EXPECT_EQ(counts.backward_updates, 1);
      const runtime::Context& view = ctx;
      for (spec::ModuleId m = 0; m < 2; ++m) {
        const runtime::ModuleMeta meta = view.meta(m);  // a host copy
        trace.insert(trace.end(), meta.forward.scale.begin(), meta.forward.scale.end());
        trace.insert(trace.end(), meta.backward.scale.begin(), meta.backward.scale.end());
        trace.insert(trace.end(), meta.forward.amax_history.begin(), meta.forward.amax_history.end());
        trace.insert(trace.end(), meta.backward.amax_history.begin(), meta.backward.amax_history.end());
      }
      trace.insert(trace.end(), y.values.begin(), y.values.end());
    }
    return trace;
  };
  const std::vector<float> with = train(true), without = train(false);
  ASSERT_EQ(with.size(), without.size());
  EXPECT_EQ(0, std::memcmp(with.data(), without.data(), with.size() * sizeof(float)));
}

// Saved graphs by name (the language's `save` / `backward TAPE`), misuse refused.
TEST(RuntimeMisuse, SavedGraphsAndBackwardInsideACheckpoint) {
  Fixture f;
  EXPECT_NE(message_of([&] { f.ctx.backward("A", Matrix(2, 4, 1.0f)); }).find("no graph was saved as 'A'"),
            std::string::npos);
  {
    runtime::Autocast fp8(f.ctx);
    f.l0.forward(f.x);
  }
  f.ctx.save_graph("A");
  EXPECT_FALSE(f.ctx.has_recorded());
  EXPECT_TRUE(f.ctx.has_recorded("A"));
  f.ctx.end_step();  // saved graphs outlive the step
  f.ctx.backward("A", Matrix(2, 4, 1.0f));
  EXPECT_EQ(f.ctx.end_step().backward_updates, 1);
  // A second pass without retain reaches the Linear whose backward the first one completed:
  // it raises there as the model says TE's Linear does (spec §3.3).
  interpreter::Interpreter model(spec::Semantics::Fp8sm, nullptr);
  model.run(spec::parse_scenario("autocast on {\n  linear L0\n}\nsave A\nstep\nbackward A\nstep\nbackward A\n"));
  ASSERT_EQ(model.steps().size(), 3u);
  ASSERT_EQ(model.steps()[2].raised.size(), 1u);
  try {
    f.ctx.backward("A", Matrix(2, 4, 1.0f));
    ADD_FAILURE() << "a second backward through a freed tape went through";
  } catch (const runtime::StateError& e) {
    EXPECT_EQ(e.kind(), spec::name(model.steps()[2].raised[0].kind)) << e.what();
  }
  EXPECT_EQ(f.ctx.end_step().backward_updates, 0);
  // backward or save inside a checkpoint's function: its recompute would run them again.
  runtime::checkpoint(f.ctx, runtime::CheckpointMode::NonReentrant, [&](const Matrix& h) {
    EXPECT_NE(message_of([&] { f.ctx.backward(Matrix(2, 4, 1.0f)); }).find("inside a checkpoint's function"),
              std::string::npos);
    EXPECT_NE(message_of([&] { f.ctx.save_graph("B"); }).find("inside a checkpoint's function"), std::string::npos);
    return f.l0.forward(h);
  }, f.x);
}

// A forward after a backward without retain records into a new graph, not into the freed one:
// saving it and then saving over it releases its checkpoint (spec §3.5: a dropped graph frees
// its checkpoint's context), as the model's step graph does. Found by the random-program
// property: the runtime kept the current graph marked freed and released nothing.
TEST(RuntimeTapes, AForwardAfterABackwardStartsAGraphThatReleasesItsCheckpoints) {
  Fixture f;
  f.l0.forward(f.x);
  f.ctx.backward(Matrix(2, 4, 1.0f));
  runtime::checkpoint(f.ctx, runtime::CheckpointMode::Reentrant, [&](const Matrix& h) { return f.l0.forward(h); },
                      f.x);
  f.ctx.save_graph("A");
  std::vector<runtime::FiredEvent> events;
  f.ctx.log_events(&events);
  f.ctx.save_graph("A");  // the graph saved as A before is dropped
  f.ctx.log_events(nullptr);
  const auto released = [](const runtime::FiredEvent& e) { return std::holds_alternative<spec::CheckpointReleased>(e.event); };
  EXPECT_EQ(std::count_if(events.begin(), events.end(), released), 1);
  // and the model ends the same program in the same state, under every semantics
  const spec::Program program =
      spec::parse_scenario("linear L0\nbackward\ncheckpoint reentrant {\n  linear L0\n}\nsave A\nsave A\n");
  for (spec::Semantics semantics : spec::kAllSemantics) {
    interpreter::Interpreter model(semantics, nullptr);
    model.run(program);
    test_support::ScenarioOnRuntime on_runtime(semantics, runtime::Recipe{}, 1);
    EXPECT_EQ(on_runtime.run(program).machine_snapshot, model.machine().snapshot()) << spec::name(semantics);
  }
}

}  // namespace
}  // namespace fp8sm
