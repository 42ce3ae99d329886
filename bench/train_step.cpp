// Where the time of an FP8 training step goes, on any backend: a stack of FP8 Linears with
// ReLUs between (one autocast around the forward, SGD on the backend, the input and the
// gradient seed uploaded once, so that a step on a device backend copies nothing), timed three
// ways in one run:
// - the step: `--steps` steps, the backend synchronised once at the end, the mean;
// - its parts: the same steps with every backend operation synchronised and timed (which adds
//   the waits, so the parts are shares of that profiled step): FP8 casts, GEMMs, the scale
//   updates, the other kernels (ReLU, sums, SGD, zeroing), and the rest, which is the runtime
//   on the host (tape, driver, the table, allocation);
// - the state machine alone: one step's table events replayed on a copy of the machine
//   (bench/runtime_overhead's method).
// The target on a GPU: the state machine under 1 % of the step at 8 layers of 4096.
//
//   bench/train_step [--backend cpu|cuda|cuda-exact|cuda-emulated] [--layers 8] [--width 4096]
//                    [--batch 4096] [--steps 10] [--checkpoint none|reentrant|nonreentrant]
// Exit status 0, 2 for bad options, 3 when the backend cannot run here (saying why).
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include "runtime/backends.hpp"
#include "runtime/fp8sm_runtime.hpp"
#include "bench/table_replay.hpp"

namespace {

namespace rt = fp8sm::runtime;
using rt::Matrix;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// A backend that times every operation of the one it wraps, synchronising after each, by part.
class TimedBackend final : public rt::Backend {
 public:
  explicit TimedBackend(std::unique_ptr<rt::Backend> inner) : inner_(std::move(inner)) {}
  std::map<std::string, double> seconds;  // by part

  // `work`'s result, its time (until the backend has run it) added to `part`.
  template <class F>
  auto timed(const std::string& part, F&& work) {
    const auto start = Clock::now();
    auto result = work();
    inner_->synchronize();
    seconds[part] += seconds_since(start);
    return result;
  }

  std::string name() const override { return inner_->name(); }
  Matrix to_backend(Matrix m) override { return inner_->to_backend(std::move(m)); }
  Matrix zeros(std::size_t rows, std::size_t cols) override { return inner_->zeros(rows, cols); }
  rt::Traffic traffic() const override { return inner_->traffic(); }
  void synchronize() override { inner_->synchronize(); }

  rt::Fp8Matrix cast_transpose(const Matrix& x, rt::MetaTensors& meta, std::size_t slot,
                               fp8sm::kernels::Format format) override {
    return timed("FP8 casts", [&] { return inner_->cast_transpose(x, meta, slot, format); });
  }
  Matrix gemm_tn(const rt::Fp8Matrix& a, bool at, const rt::Fp8Matrix& b, bool bt) override {
    return timed("GEMMs", [&] { return inner_->gemm_tn(a, at, b, bt); });
  }
  Matrix matmul_nt(const Matrix& a, const Matrix& b) override {
    return timed("GEMMs", [&] { return inner_->matmul_nt(a, b); });
  }
  Matrix transpose(const Matrix& a) override { return timed("other kernels", [&] { return inner_->transpose(a); }); }
  Matrix relu(const Matrix& x) override { return timed("other kernels", [&] { return inner_->relu(x); }); }
  Matrix relu_backward(const Matrix& x, const Matrix& dy) override {
    return timed("other kernels", [&] { return inner_->relu_backward(x, dy); });
  }
  Matrix add(const Matrix& a, const Matrix& b) override { return timed("other kernels", [&] { return inner_->add(a, b); }); }
  void add_into(Matrix& sum, const Matrix& term) override {
    timed("other kernels", [&] { inner_->add_into(sum, term); return 0; });
  }
  void sgd(Matrix& w, const Matrix& g, float rate) override {
    timed("other kernels", [&] { inner_->sgd(w, g, rate); return 0; });
  }
  void zero(Matrix& m) override { timed("other kernels", [&] { inner_->zero(m); return 0; }); }
  rt::MetaTensors fresh_meta(std::size_t history_length, std::size_t slots) override {
    return inner_->fresh_meta(history_length, slots);
  }
  void discard_current_amax(rt::MetaTensors& meta) override {
    timed("scale updates", [&] { inner_->discard_current_amax(meta); return 0; });
  }
  void reduce_and_update(const std::vector<rt::MetaTensors*>& metas, rt::AmaxReductionGroup* group, bool reduce_amax,
                         const fp8sm::kernels::ScaleUpdateRecipe& recipe) override {
    timed("scale updates", [&] { inner_->reduce_and_update(metas, group, reduce_amax, recipe); return 0; });
  }

 private:
  std::unique_ptr<rt::Backend> inner_;
};

struct Options {
  std::string backend = "cpu";
  int layers = 8;
  std::size_t width = 4096;
  std::size_t batch = 4096;
  int steps = 10;
  std::string checkpoint = "none";
};

// The network and its training step on `ctx`.
class Stack {
 public:
  Stack(rt::Context& ctx, const Options& o) : ctx_(ctx), options_(o) {
    for (int i = 0; i < o.layers; ++i) {
      layers_.push_back(std::make_unique<rt::Linear>(ctx, fmt::format("L{}", i), o.width, o.width, 7u + i));
    }
    // Made once, kept where the backend computes: a step then copies nothing.
    Matrix x(o.batch, o.width), g(o.batch, o.width);
    for (std::size_t i = 0; i < x.values.size(); ++i) {
      x.values[i] = static_cast<float>(static_cast<int>(i % 17) - 8) / 8.0f;
      g.values[i] = static_cast<float>(static_cast<int>(i % 13) - 6) * 1e-4f;
    }
    x_ = ctx.backend().to_backend(std::move(x));
    grad_ = ctx.backend().to_backend(std::move(g));
  }

  void step() {
    Matrix y;
    {
      rt::Autocast fp8(ctx_);
      Matrix h = x_;
      for (auto& l : layers_) {
        const auto layer = [this, &l](const Matrix& in) { return rt::relu(ctx_, l->forward(in)); };
        if (options_.checkpoint == "none") {
          h = layer(h);
        } else {
          const auto mode = options_.checkpoint == "reentrant" ? rt::CheckpointMode::Reentrant : rt::CheckpointMode::NonReentrant;
          h = rt::checkpoint(ctx_, mode, layer, h);
        }
      }
      y = std::move(h);
    }
    for (auto& l : layers_) ctx_.backend().zero(l->weight_grad());
    ctx_.backward(grad_);
    for (auto& l : layers_) ctx_.backend().sgd(l->weight(), l->weight_grad(), 1e-3f);
    ctx_.end_step();
  }

 private:
  rt::Context& ctx_;
  Options options_;
  std::vector<std::unique_ptr<rt::Linear>> layers_;
  Matrix x_, grad_;
};

rt::Recipe recipe() {
  rt::Recipe r;
  r.amax_history_len = 16;
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"train_step: where an FP8 training step's time goes, on a backend"};
  Options o;
  app.add_option("--backend", o.backend, "cpu, cuda, cuda-exact or cuda-emulated (default cpu)");
  app.add_option("--layers", o.layers, "Linear layers (default 8)");
  app.add_option("--width", o.width, "features per layer (default 4096)");
  app.add_option("--batch", o.batch, "rows per step (default 4096)");
  app.add_option("--steps", o.steps, "timed steps (default 10)");
  app.add_option("--checkpoint", o.checkpoint, "none, reentrant or nonreentrant around each layer (default none)")
      ->check(CLI::IsMember({"none", "reentrant", "nonreentrant"}));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    std::fprintf(stderr, "train_step: error: %s\n", e.what());
    return 2;
  }
  if (o.layers < 1 || o.width < 1 || o.batch < 1 || o.steps < 1) {
    std::fprintf(stderr, "train_step: error: every size must be 1 or more\n");
    return 2;
  }
  try {
    rt::require_backend(o.backend);
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "train_step: error: %s\n", e.what());
    return 2;
  } catch (const std::runtime_error& e) {
    std::fprintf(stderr, "train_step: %s\n", e.what());
    return 3;
  }

  fmt::print("{} layers of {}, batch {}, checkpoint {}, backend {}, fp8sm\n", o.layers, o.width, o.batch, o.checkpoint,
             o.backend);
  // The step as it runs.
  double step_ms = 0;
  rt::Traffic copies;
  {
    rt::Context ctx(recipe(), rt::make_backend(o.backend));
    Stack stack(ctx, o);
    stack.step();  // first use: registration, the keys' pointer arrays, the caches
    ctx.backend().synchronize();
    const rt::Traffic before = ctx.backend().traffic();
    const auto start = Clock::now();
    for (int s = 0; s < o.steps; ++s) stack.step();
    copies = rt::since(before, ctx.backend().traffic());  // before the wait for the end, which is ours
    ctx.backend().synchronize();
    step_ms = seconds_since(start) * 1000.0 / o.steps;
  }
  fmt::print("step: {:.3f} ms; per step {:.1f} uploads, {:.1f} downloads, {:.1f} waits for the device\n", step_ms,
             static_cast<double>(copies.uploads) / o.steps, static_cast<double>(copies.downloads) / o.steps,
             static_cast<double>(copies.synchronizations) / o.steps);

  // Its parts, every operation synchronised and timed.
  auto timed = std::make_unique<TimedBackend>(rt::make_backend(o.backend));
  TimedBackend& parts = *timed;
  rt::Context ctx(recipe(), std::move(timed));
  Stack stack(ctx, o);
  stack.step();
  parts.seconds.clear();
  const auto start = Clock::now();
  for (int s = 0; s < o.steps; ++s) stack.step();
  const double profiled_ms = seconds_since(start) * 1000.0 / o.steps;
  const std::map<std::string, double> part_seconds = parts.seconds;

  // The state machine: one step's events replayed on copies of the machine as it was before.
  const fp8sm::bench::TableTime table = fp8sm::bench::time_table(ctx, [&stack] { stack.step(); }, 2000);
  const double machine_ms = table.ns_per_step / 1e6;

  fmt::print("profiled step (every operation waited for): {:.3f} ms\n", profiled_ms);
  double accounted = 0;
  for (const char* part : {"FP8 casts", "GEMMs", "scale updates", "other kernels"}) {
    const auto found = part_seconds.find(part);
    const double ms = (found == part_seconds.end() ? 0.0 : found->second) * 1000.0 / o.steps;
    accounted += ms;
    fmt::print("  {:<28} {:10.3f} ms {:7.2f} %\n", part, ms, 100.0 * ms / profiled_ms);
  }
  fmt::print("  {:<28} {:10.3f} ms {:7.2f} %\n", "the runtime on the host", profiled_ms - accounted,
             100.0 * (profiled_ms - accounted) / profiled_ms);
  fmt::print("state machine: {} events, {:.4f} ms a step: {:.4f} % of the step\n", table.events, machine_ms,
             100.0 * machine_ms / step_ms);
  return 0;
}
