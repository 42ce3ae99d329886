// Properties of the runtime, checked on random cases that RapidCheck shrinks to a minimal one:
// (a) a random program gives the same update counts, the same escaped exceptions and the same
//     final state-machine state on the runtime as on the model, under every semantics;
// (b) checkpointing is transparent: any checkpoint arrangement of a random network trains bit
//     for bit as the same network without checkpoints (fp8sm), over several steps and recipes;
// (c) an exception raised at any point inside any scope leaves the runtime as the model (the
//     spec) says, and the steps after it work: (a)'s programs contain raise statements
//     anywhere, and (a) compares every step that follows.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "runtime/fp8sm_runtime.hpp"
#include "scenario_on_runtime.hpp"
#include "spec/scenario_parser.hpp"
#include "statemachine/interpreter.hpp"

namespace fp8sm {
namespace {

using runtime::Matrix;
using spec::Op;
using spec::Statement;

constexpr int kModules = 3;

// A well-formed program of the subset ScenarioOnRuntime runs, from a list of choices: each
// choice picks one of the statements the language allows at that point (closing the innermost
// block among them), so RapidCheck shrinks programs by shrinking choices. No non-reentrant
// checkpoint inside another (the runtime refuses it).
spec::Program program_from(const std::vector<int>& choices) {
  spec::Program program;
  for (int m = 0; m < kModules; ++m) program.module_names.push_back("L" + std::to_string(m));
  program.tape_names.push_back("A");
  std::vector<Op> open;
  auto make = [](Op op, std::uint16_t name = 0) {
    Statement s;
    s.op = op;
    s.name = name;
    return s;
  };
  for (int choice : choices) {
    const bool in_checkpoint = std::any_of(open.begin(), open.end(), spec::is_checkpoint);
    const bool in_non_reentrant = std::find(open.begin(), open.end(), Op::CheckpointNonReentrant) != open.end();
    std::vector<Statement> allowed;
    for (Op op : {Op::AutocastOn, Op::AutocastOff, Op::CheckpointReentrant, Op::NoGrad, Op::Try}) allowed.push_back(make(op));
    if (!in_non_reentrant) allowed.push_back(make(Op::CheckpointNonReentrant));
    for (int m = 0; m < kModules; ++m) {
      allowed.push_back(make(Op::Linear, static_cast<std::uint16_t>(m)));
      allowed.push_back(make(Op::Linear, static_cast<std::uint16_t>(m)));  // modules twice as likely
    }
    for (Op op : {Op::RaiseAlways, Op::RaiseOriginal, Op::RaiseRecompute}) allowed.push_back(make(op));
    if (!in_checkpoint) {  // backward three times as likely: it is what runs recomputes
      for (int i = 0; i < 3; ++i) allowed.push_back(make(Op::Backward, spec::kCurrentGraph));
    }
    if (open.empty()) allowed.push_back(make(Op::Step));
    if (!open.empty()) {
      allowed.push_back(make(Op::Close));
      allowed.push_back(make(Op::Close));
    }
    const Statement s = allowed[static_cast<std::size_t>(choice) % allowed.size()];
    if (spec::opens_block(s.op)) open.push_back(s.op);
    if (s.op == Op::Close) open.pop_back();
    program.statements.push_back(s);
  }
  for (; !open.empty(); open.pop_back()) program.statements.push_back(make(Op::Close));
  return program;
}

RC_GTEST_PROP(RuntimeProperties, RandomProgramsRunAsOnTheModel, ()) {
  const auto choices = *rc::gen::resize(40, rc::gen::container<std::vector<int>>(rc::gen::inRange(0, 1000)));
  const spec::Program program = program_from(choices);
  auto has = [&](auto predicate) { return std::any_of(program.statements.begin(), program.statements.end(), predicate); };
  RC_CLASSIFY(has([](const Statement& s) { return spec::is_checkpoint(s.op); }), "checkpoint");
  RC_CLASSIFY(has([](const Statement& s) { return s.op == Op::Backward; }), "backward");
  RC_CLASSIFY(has([](const Statement& s) { return s.op == Op::RaiseAlways || s.op == Op::RaiseOriginal || s.op == Op::RaiseRecompute; }), "raise");
  RC_CLASSIFY(has([](const Statement& s) { return s.op == Op::Try; }), "try");
  for (spec::Semantics semantics : spec::kAllSemantics) {
    statemachine::Interpreter model(semantics, nullptr);
    model.run(program);

    runtime::Recipe recipe;
    recipe.reduce_amax = false;  // the model lets a module run twice in a region; TE then needs this
    recipe.amax_history_len = 4;
    test_support::ScenarioOnRuntime on_runtime(semantics, recipe, kModules);
    test_support::RuntimeRun run;
    try {
      run = on_runtime.run(program);
    } catch (const test_support::RuntimeRefused&) {
      RC_DISCARD("refused by the runtime where the model goes on (see RuntimeRefused)");
    }
    RC_LOG() << spec::name(semantics) << ":\n" << spec::print_scenario(program);
    RC_ASSERT(run.counts.size() == model.steps().size());
    for (std::size_t i = 0; i < run.counts.size(); ++i) {
      RC_ASSERT(run.counts[i].forward_updates == model.steps()[i].forward_updates);
      RC_ASSERT(run.counts[i].backward_updates == model.steps()[i].backward_updates);
      std::vector<std::string> kinds;
      for (const auto& e : model.steps()[i].raised) kinds.push_back(e.kind);
      RC_ASSERT(run.raised[i] == kinds);
    }
    RC_ASSERT(run.machine_snapshot == model.machine().snapshot());
  }
}

// ---- (b) transparency ------------------------------------------------------------------------

enum class Wrap { None, Reentrant, NonReentrant };
void showValue(Wrap w, std::ostream& os) {
  os << (w == Wrap::None ? "none" : w == Wrap::Reentrant ? "reentrant" : "non-reentrant");
}

struct Arrangement {
  std::vector<Wrap> per_layer;  // a checkpoint around each layer, or not
  Wrap outer = Wrap::None;      // one around the whole network
};

struct Trained {
  std::vector<Matrix> outputs;
  std::vector<Matrix> input_grads;
  std::vector<Matrix> weights, weight_grads;
  std::vector<runtime::ModuleMeta> metas;
};

runtime::CheckpointMode mode_of(Wrap w) {
  return w == Wrap::Reentrant ? runtime::CheckpointMode::Reentrant : runtime::CheckpointMode::NonReentrant;
}

Trained train(const std::vector<std::size_t>& widths, const Arrangement& arrangement, const runtime::Recipe& recipe,
              int steps, std::uint64_t seed) {
  runtime::Context ctx(recipe);
  std::vector<std::unique_ptr<runtime::Linear>> layers;
  for (std::size_t i = 0; i + 1 < widths.size(); ++i) {
    layers.push_back(std::make_unique<runtime::Linear>(ctx, "L" + std::to_string(i), widths[i], widths[i + 1], seed + i));
  }
  auto layer = [&](std::size_t i) {
    return [&, i](const Matrix& x) { return runtime::relu(ctx, layers[i]->forward(x)); };
  };
  auto network = [&](const Matrix& x) {
    Matrix h = x;
    for (std::size_t i = 0; i < layers.size(); ++i) {
      const Wrap w = arrangement.per_layer[i];
      h = w == Wrap::None ? layer(i)(h) : runtime::checkpoint(ctx, mode_of(w), layer(i), h);
    }
    return h;
  };
  Trained out;
  std::mt19937_64 random(seed);
  std::uniform_real_distribution<float> uniform(-2.0f, 2.0f);
  for (int step = 0; step < steps; ++step) {
    Matrix x(3, widths.front());
    for (float& v : x.values) v = uniform(random);
    Matrix y;
    {
      runtime::Autocast fp8(ctx);
      y = arrangement.outer == Wrap::None ? network(x) : runtime::checkpoint(ctx, mode_of(arrangement.outer), network, x);
    }
    Matrix grad(y.rows, y.cols);
    for (float& v : grad.values) v = uniform(random);
    out.outputs.push_back(y);
    out.input_grads.push_back(ctx.backward(grad));
    ctx.end_step();
  }
  for (const auto& l : layers) {
    out.weights.push_back(l->weight());
    out.weight_grads.push_back(l->weight_grad());
    out.metas.push_back(l->meta());
  }
  return out;
}

RC_GTEST_PROP(RuntimeProperties, CheckpointingIsTransparent, ()) {
  const auto layers = *rc::gen::inRange<std::size_t>(1, 5);
  const auto widths = *rc::gen::container<std::vector<std::size_t>>(layers + 1, rc::gen::inRange<std::size_t>(1, 7));
  Arrangement arrangement;
  arrangement.outer = *rc::gen::element(Wrap::None, Wrap::Reentrant, Wrap::NonReentrant);
  for (std::size_t i = 0; i < layers; ++i) {
    Wrap w = *rc::gen::element(Wrap::None, Wrap::Reentrant, Wrap::NonReentrant);
    if (w == Wrap::NonReentrant && arrangement.outer == Wrap::NonReentrant) w = Wrap::Reentrant;  // see the runtime
    arrangement.per_layer.push_back(w);
  }
  runtime::Recipe recipe;
  recipe.amax_history_len = *rc::gen::inRange<std::size_t>(1, 6);
  recipe.margin = *rc::gen::inRange(0, 3);
  recipe.amax_compute_algo = *rc::gen::element(kernels::AmaxComputeAlgo::Max, kernels::AmaxComputeAlgo::MostRecent);
  recipe.update_path = *rc::gen::element(kernels::UpdatePath::Fused, kernels::UpdatePath::Unfused);
  recipe.fp8_format = *rc::gen::element(runtime::Fp8Format::Hybrid, runtime::Fp8Format::E4M3);
  const int steps = *rc::gen::inRange(1, 5);
  const auto seed = *rc::gen::inRange<std::uint64_t>(0, 1000);

  const Trained checkpointed = train(widths, arrangement, recipe, steps, seed);
  const Trained plain = train(widths, Arrangement{std::vector<Wrap>(layers, Wrap::None), Wrap::None}, recipe, steps, seed);
  for (int s = 0; s < steps; ++s) {
    RC_ASSERT(checkpointed.outputs[static_cast<std::size_t>(s)] == plain.outputs[static_cast<std::size_t>(s)]);
    RC_ASSERT(checkpointed.input_grads[static_cast<std::size_t>(s)] == plain.input_grads[static_cast<std::size_t>(s)]);
  }
  for (std::size_t l = 0; l < layers; ++l) {
    RC_ASSERT(checkpointed.weights[l] == plain.weights[l]);
    RC_ASSERT(checkpointed.weight_grads[l] == plain.weight_grads[l]);
    RC_ASSERT(checkpointed.metas[l].forward.amax_history == plain.metas[l].forward.amax_history);
    RC_ASSERT(checkpointed.metas[l].forward.scale == plain.metas[l].forward.scale);
    RC_ASSERT(checkpointed.metas[l].backward.amax_history == plain.metas[l].backward.amax_history);
    RC_ASSERT(checkpointed.metas[l].backward.scale == plain.metas[l].backward.scale);
  }
}

}  // namespace
}  // namespace fp8sm
