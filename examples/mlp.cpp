#include "examples/mlp.hpp"

#include <fmt/core.h>

#include <cmath>
#include <random>
#include <stdexcept>

#include "runtime/backends.hpp"

namespace fp8sm::examples {

using runtime::Matrix;

namespace {

constexpr std::size_t kInputs = 8;
constexpr std::size_t kHidden = 32;

// The function to learn: a smooth map of the inputs, so that the loss can fall steadily.
float target(const float* x) {
  float t = 0;
  for (std::size_t i = 0; i < kInputs; ++i) t += std::sin(x[i] * static_cast<float>(i + 1)) / static_cast<float>(i + 1);
  return t;
}

}  // namespace

CheckpointKind parse_checkpoint(const std::string& text) {
  if (text == "none") return CheckpointKind::None;
  if (text == "reentrant") return CheckpointKind::Reentrant;
  if (text == "nonreentrant") return CheckpointKind::NonReentrant;
  throw std::invalid_argument(fmt::format("unknown checkpoint kind '{}' (expected none, reentrant or nonreentrant)", text));
}

Granularity parse_granularity(const std::string& text) {
  if (text == "single") return Granularity::Single;
  if (text == "per-layer") return Granularity::PerLayer;
  if (text == "nested") return Granularity::Nested;
  throw std::invalid_argument(fmt::format("unknown granularity '{}' (expected single, per-layer or nested)", text));
}

MlpResult train_mlp(const MlpOptions& options, const std::function<void(const StepReport&)>& each_step) {
  runtime::Context ctx(options.recipe, runtime::make_backend(options.backend), options.semantics);
  runtime::Linear l0(ctx, "L0", kInputs, kHidden, 1);
  runtime::Linear l1(ctx, "L1", kHidden, kHidden, 2);
  runtime::Linear l2(ctx, "L2", kHidden, 1, 3);
  std::vector<runtime::Linear*> layers = {&l0, &l1, &l2};

  const runtime::CheckpointMode mode = options.checkpoint == CheckpointKind::NonReentrant
                                           ? runtime::CheckpointMode::NonReentrant
                                           : runtime::CheckpointMode::Reentrant;
  const bool checkpointed = options.checkpoint != CheckpointKind::None;
  auto layer = [&](std::size_t i) {
    return [&, i](const Matrix& x) {
      const Matrix y = layers[i]->forward(x);
      return i + 1 < layers.size() ? runtime::relu(ctx, y) : y;
    };
  };
  auto all_layers = [&](const Matrix& x) { return layer(2)(layer(1)(layer(0)(x))); };
  auto forward = [&](const Matrix& x) -> Matrix {
    if (!checkpointed) return all_layers(x);
    switch (options.granularity) {
      case Granularity::Single:
        return runtime::checkpoint(ctx, mode, all_layers, x);
      case Granularity::PerLayer: {
        Matrix h = x;
        for (std::size_t i = 0; i < layers.size(); ++i) h = runtime::checkpoint(ctx, mode, layer(i), h);
        return h;
      }
      case Granularity::Nested:
        // An outer checkpoint around everything, a reentrant one around the middle layer.
        return runtime::checkpoint(
            ctx, mode,
            [&](const Matrix& x0) {
              const Matrix h = runtime::checkpoint(ctx, runtime::CheckpointMode::Reentrant, layer(1), layer(0)(x0));
              return layer(2)(h);
            },
            x);
    }
    return all_layers(x);
  };

  std::mt19937_64 random(2026);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  MlpResult result;
  for (int step = 0; step < options.steps; ++step) {
    const runtime::Traffic before = ctx.backend().traffic();
    Matrix x(options.batch, kInputs);
    for (float& v : x.values) v = uniform(random);
    Matrix prediction;
    {
      runtime::Autocast fp8(ctx);
      prediction = forward(x);
    }
    // Mean squared error and its gradient, on the host: the prediction is read back (the one
    // download of a step on a device backend) and the gradient goes in with backward.
    const Matrix predicted = prediction.to_host();
    Matrix grad(options.batch, 1);
    float loss = 0;
    for (std::size_t i = 0; i < options.batch; ++i) {
      const float error = predicted.at(i, 0) - target(&x.values[i * kInputs]);
      loss += error * error;
      grad.at(i, 0) = 2.0f * error / static_cast<float>(options.batch);
    }
    loss /= static_cast<float>(options.batch);
    // SGD where the weights are (the backend's sgd: w -= rate * g).
    for (runtime::Linear* l : layers) ctx.backend().zero(l->weight_grad());
    ctx.backward(grad);
    for (runtime::Linear* l : layers) ctx.backend().sgd(l->weight(), l->weight_grad(), options.learning_rate);
    StepReport report{step, loss, ctx.end_step(), runtime::since(before, ctx.backend().traffic())};
    if (each_step) each_step(report);
    result.steps.push_back(report);
  }
  for (runtime::Linear* l : layers) {
    result.weights.push_back(l->weight().to_host());
    result.metas.push_back(l->meta());
  }
  return result;
}

}  // namespace fp8sm::examples
