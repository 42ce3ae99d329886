// A random network trained on the runtime, for the properties that compare two trainings bit
// for bit: checkpointing against none (test_runtime_properties), one backend against another
// (test_device_backend_properties). Everything a training touches is kept: outputs, input
// gradients, weights, weight gradients, amax histories and scales.
#pragma once

#include <fmt/core.h>
#include <rapidcheck.h>

#include <cstdint>
#include <memory>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "runtime/backends.hpp"
#include "runtime/fp8sm_runtime.hpp"

namespace fp8sm::test_support {

using runtime::Matrix;

enum class Wrap { None, Reentrant, NonReentrant };
inline void showValue(Wrap w, std::ostream& os) {
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

inline runtime::CheckpointMode mode_of(Wrap w) {
  return w == Wrap::Reentrant ? runtime::CheckpointMode::Reentrant : runtime::CheckpointMode::NonReentrant;
}

inline Trained train(const std::vector<std::size_t>& widths, const Arrangement& arrangement, const runtime::Recipe& recipe,
                     int steps, std::uint64_t seed, const std::string& backend = "cpu") {
  runtime::Context ctx(recipe, runtime::make_backend(backend));
  std::vector<std::unique_ptr<runtime::Linear>> layers;
  for (std::size_t i = 0; i + 1 < widths.size(); ++i) {
    layers.push_back(std::make_unique<runtime::Linear>(ctx, fmt::format("L{}", i), widths[i], widths[i + 1], seed + i));
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

// A random case: 1-4 layers of widths 1-6, checkpoints around any layers and around the whole
// network (both modes, no non-reentrant inside non-reentrant: the runtime refuses it), any
// recipe, 1-4 steps.
struct TrainingCase {
  std::vector<std::size_t> widths;
  Arrangement arrangement;
  runtime::Recipe recipe;
  int steps = 1;
  std::uint64_t seed = 0;
  std::size_t layers() const { return widths.size() - 1; }
};

inline TrainingCase random_training_case() {
  TrainingCase c;
  const auto layers = *rc::gen::inRange<std::size_t>(1, 5);
  c.widths = *rc::gen::container<std::vector<std::size_t>>(layers + 1, rc::gen::inRange<std::size_t>(1, 7));
  c.arrangement.outer = *rc::gen::element(Wrap::None, Wrap::Reentrant, Wrap::NonReentrant);
  for (std::size_t i = 0; i < layers; ++i) {
    Wrap w = *rc::gen::element(Wrap::None, Wrap::Reentrant, Wrap::NonReentrant);
    if (w == Wrap::NonReentrant && c.arrangement.outer == Wrap::NonReentrant) w = Wrap::Reentrant;  // see the runtime
    c.arrangement.per_layer.push_back(w);
  }
  c.recipe.amax_history_len = *rc::gen::inRange<std::size_t>(1, 6);
  c.recipe.margin = *rc::gen::inRange(0, 3);
  c.recipe.amax_compute_algo = *rc::gen::element(kernels::AmaxComputeAlgo::Max, kernels::AmaxComputeAlgo::MostRecent);
  c.recipe.update_path = *rc::gen::element(kernels::UpdatePath::Fused, kernels::UpdatePath::Unfused);
  c.recipe.fp8_format = *rc::gen::element(runtime::Fp8Format::Hybrid, runtime::Fp8Format::E4M3);
  c.steps = *rc::gen::inRange(1, 5);
  c.seed = *rc::gen::inRange<std::uint64_t>(0, 1000);

  return c;
}

// Whether two trainings are the same, bit for bit.
inline bool same_training(const Trained& a, const Trained& b) {
  if (a.outputs != b.outputs || a.input_grads != b.input_grads || a.weights != b.weights ||
      a.weight_grads != b.weight_grads || a.metas.size() != b.metas.size()) {
    return false;
  }
  for (std::size_t l = 0; l < a.metas.size(); ++l) {
    if (a.metas[l].forward.amax_history != b.metas[l].forward.amax_history ||
        a.metas[l].forward.scale != b.metas[l].forward.scale ||
        a.metas[l].backward.amax_history != b.metas[l].backward.amax_history ||
        a.metas[l].backward.scale != b.metas[l].backward.scale) {
      return false;
    }
  }
  return true;
}

}  // namespace fp8sm::test_support
