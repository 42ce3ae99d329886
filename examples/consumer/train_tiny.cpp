// A tiny regression trained in FP8 through an installed fp8sm runtime: two Linears with a ReLU
// between, one autocast around the forward, plain SGD, the CPU reference backend. Prints the
// first and the final loss; exit status 0 only if the loss went down (the mean of the last ten
// steps below half the mean of the first ten), 1 otherwise or on an error.
#include <algorithm>
#include <cmath>
#include <exception>
#include <numeric>
#include <random>
#include <vector>

#include <fmt/core.h>

#include "runtime/fp8sm_runtime.hpp"

namespace rt = fp8sm::runtime;

int main() {
  constexpr std::size_t kInputs = 4;
  constexpr std::size_t kBatch = 32;
  constexpr int kSteps = 200;
  constexpr float kLearningRate = 0.05f;
  try {
    rt::Context ctx(rt::Recipe{});  // fp8sm semantics, CPU backend
    rt::Linear l0(ctx, "L0", kInputs, 16, 1), l1(ctx, "L1", 16, 1, 2);
    std::mt19937 random(7);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    std::vector<float> losses;
    for (int step = 0; step < kSteps; ++step) {
      rt::Matrix x(kBatch, kInputs);
      for (float& v : x.values) v = uniform(random);
      rt::Matrix y;
      {
        rt::Autocast fp8(ctx);
        y = l1.forward(rt::relu(ctx, l0.forward(x)));
      }
      // Mean squared error against a smooth function of the inputs, and its gradient.
      rt::Matrix grad(kBatch, 1);
      const float n = static_cast<float>(kBatch);
      float loss = 0;
      for (std::size_t i = 0; i < kBatch; ++i) {
        const float target = std::sin(x.at(i, 0)) + 0.5f * x.at(i, 1) * x.at(i, 2) - 0.25f * x.at(i, 3);
        const float error = y.at(i, 0) - target;
        loss += error * error / n;
        grad.at(i, 0) = 2.0f * error / n;
      }
      for (rt::Linear* l : {&l0, &l1}) std::fill(l->weight_grad().values.begin(), l->weight_grad().values.end(), 0.0f);
      ctx.backward(grad);
      for (rt::Linear* l : {&l0, &l1}) {
        for (std::size_t i = 0; i < l->weight().values.size(); ++i) {
          l->weight().values[i] -= kLearningRate * l->weight_grad().values[i];
        }
      }
      ctx.end_step();
      losses.push_back(loss);
    }
    const float first = std::accumulate(losses.begin(), losses.begin() + 10, 0.0f) / 10;
    const float last = std::accumulate(losses.end() - 10, losses.end(), 0.0f) / 10;
    fmt::print("first loss {:.6f}\nfinal loss {:.6f}\n", first, last);
    return std::isfinite(last) && last < 0.5f * first ? 0 : 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "train_tiny: error: {}\n", e.what());
    return 1;
  }
}
