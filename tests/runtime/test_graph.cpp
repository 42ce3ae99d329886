// The runtime's graph tape, by cases worked out by hand. The scenario language is a list of
// statements over one implicit value (each `linear` reads what the previous one wrote), so the
// model ≡ runtime properties cannot draw graphs; these cases pin the graph rules down instead:
// gradients summed from every consumer in the order they arrive, torch's backward order, a
// checkpoint of a sub-graph with several inputs, a non-reentrant frame recomputed at the first
// unpack of one of its own nodes (and not at a node that saves nothing), a node that leads
// nowhere refused. tests/runtime/test_graph_properties.cpp trains random graphs.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <variant>
#include <vector>

#include "kernels/layer_math.hpp"
#include "runtime/fp8sm_runtime.hpp"

namespace fp8sm {
namespace {

using runtime::CheckpointMode;
using runtime::Context;
using runtime::Matrix;
using runtime::Tensor;

runtime::Recipe recipe() {
  runtime::Recipe r;
  r.amax_history_len = 4;
  return r;
}

Matrix random_matrix(std::size_t rows, std::size_t cols, std::uint64_t seed) {
  std::mt19937_64 random(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  Matrix m(rows, cols);
  for (float& v : m.values) v = normal(random);
  return m;
}

// C = A Bᵀ, k ascending: the order the runtime's fp32 Linear computes in.
Matrix matmul_nt(const Matrix& a, const Matrix& b) {
  Matrix c(a.rows, b.rows);
  for (std::size_t i = 0; i < a.rows; ++i) {
    for (std::size_t j = 0; j < b.rows; ++j) {
      float sum = 0.0f;
      for (std::size_t k = 0; k < a.cols; ++k) sum += a.at(i, k) * b.at(j, k);
      c.at(i, j) = sum;
    }
  }
  return c;
}

Matrix transpose(const Matrix& a) {
  Matrix t(a.cols, a.rows);
  for (std::size_t i = 0; i < a.rows; ++i) {
    for (std::size_t j = 0; j < a.cols; ++j) t.at(j, i) = a.at(i, j);
  }
  return t;
}

// a = L0(x) feeds relu and gelu, their sum is the output. Backward: the sum (recorded last) gives
// G to both; gelu (recorded after relu) runs first, so a's gradient is gelu's, then relu's added.
TEST(RuntimeGraph, GradientsOfATensorWithTwoConsumersAreSummedInTheOrderTheyArrive) {
  Context ctx(recipe());
  runtime::Linear l0(ctx, "L0", 3, 5, 1);
  const Tensor x = ctx.input(random_matrix(4, 3, 2));
  const Tensor a = l0.forward(x);
  const Tensor r = runtime::relu(ctx, a);
  const Tensor g = runtime::gelu(ctx, a);
  const Tensor s = runtime::add(ctx, r, g);
  const Matrix G = random_matrix(4, 5, 3);
  ctx.backward(s, G);

  Matrix da(4, 5);
  kernels::gelu_backward(a.value.values.data(), G.values.data(), da.values.data(), da.values.size());
  for (std::size_t i = 0; i < da.values.size(); ++i) da.values[i] += a.value.values[i] > 0.0f ? G.values[i] : 0.0f;
  EXPECT_EQ(l0.weight_grad(), matmul_nt(transpose(da), transpose(x.value)));
  EXPECT_EQ(ctx.gradient(x), matmul_nt(da, transpose(l0.weight())));
  EXPECT_EQ(ctx.end_step().backward_updates, 0);  // no autocast: nothing is FP8
}

std::vector<spec::ModuleId> module_backwards(const std::vector<runtime::FiredEvent>& log) {
  std::vector<spec::ModuleId> order;
  for (const runtime::FiredEvent& fired : log) {
    if (const auto* begin = std::get_if<spec::ModuleBackwardBegin>(&fired.event)) order.push_back(begin->module);
  }
  return order;
}

// torch runs a node once every consumer has passed it its gradient, the most recently recorded
// of the ready ones first: L2 (recorded last) before L1, both before L0 whose output they read.
TEST(RuntimeGraph, BackwardRunsTheNodesInTorchsOrder) {
  Context ctx(recipe());
  runtime::Linear l0(ctx, "L0", 4, 4, 1), l1(ctx, "L1", 4, 4, 2), l2(ctx, "L2", 4, 4, 3);
  Tensor s;
  {
    runtime::Autocast fp8(ctx);
    const Tensor a = l0.forward(ctx.input(random_matrix(2, 4, 4)));
    const Tensor b = l1.forward(a);
    const Tensor c = l2.forward(a);
    s = runtime::add(ctx, b, c);
  }
  std::vector<runtime::FiredEvent> log;
  ctx.log_events(&log);
  ctx.backward(s, random_matrix(2, 4, 5));
  ctx.log_events(nullptr);
  EXPECT_EQ(module_backwards(log), (std::vector<spec::ModuleId>{l2.id(), l1.id(), l0.id()}));
  const runtime::StepCounts counts = ctx.end_step();
  EXPECT_EQ(counts.forward_updates, 1);
  EXPECT_EQ(counts.backward_updates, 1);
}

// A network with two inputs, a residual and a block of two inputs that may be checkpointed.
struct TwoInputNetwork {
  explicit TwoInputNetwork(Context& context)
      : ctx(context), l0(context, "L0", 4, 6, 1), l1(context, "L1", 3, 6, 2), l2(context, "L2", 6, 6, 3),
        l3(context, "L3", 6, 6, 4), head(context, "head", 6, 5, 5) {}

  // block(a, b) = L2(relu(a)) + L3(b); out = head(block + a).
  Tensor block(const std::vector<Tensor>& in) {
    const Tensor p = l2.forward(runtime::relu(ctx, in[0]));
    const Tensor q = l3.forward(in[1]);
    return runtime::add(ctx, p, q);
  }

  float step(const Matrix& x, const Matrix& y, const std::vector<int>& targets, const char* checkpointing) {
    Tensor loss;
    // What a checkpoint's function captures by reference must outlive the backward, which
    // calls it again: `f` lives as long as the step, not only the autocast block.
    const auto f = [this](const std::vector<Tensor>& in) { return block(in); };
    {
      runtime::Autocast fp8(ctx);
      const Tensor a = l0.forward(ctx.input(x));
      const Tensor b = l1.forward(ctx.input(y));
      Tensor h;
      if (std::string(checkpointing) == "none") {
        h = block({a, b});
      } else if (std::string(checkpointing) == "nested") {
        h = runtime::checkpoint(ctx, CheckpointMode::NonReentrant,
                                [&](const std::vector<Tensor>& in) {
                                  return runtime::checkpoint(ctx, CheckpointMode::Reentrant, f, in);
                                },
                                {a, b});
      } else {
        h = runtime::checkpoint(ctx, std::string(checkpointing) == "reentrant" ? CheckpointMode::Reentrant
                                                                               : CheckpointMode::NonReentrant,
                                f, {a, b});
      }
      loss = runtime::cross_entropy(ctx, head.forward(runtime::add(ctx, h, a)), targets);
    }
    ctx.backward(loss, Matrix(1, 1, 1.0f));
    for (runtime::Linear* l : {&l0, &l1, &l2, &l3, &head}) {
      for (std::size_t i = 0; i < l->weight().values.size(); ++i) {
        l->weight().values[i] -= 0.1f * l->weight_grad().values[i];
        l->weight_grad().values[i] = 0.0f;
      }
    }
    return loss.value.values[0];
  }

  Context& ctx;
  runtime::Linear l0, l1, l2, l3, head;
};

// The block, checkpointed every way, trains bit for bit as without, at one forward and one
// backward update a step (fp8sm).
TEST(RuntimeGraph, ACheckpointOfASubGraphWithTwoInputsIsTransparent) {
  const Matrix x = random_matrix(8, 4, 6), y = random_matrix(8, 3, 7);
  const std::vector<int> targets = {0, 1, 2, 3, 4, 0, 1, 2};
  std::vector<std::vector<float>> reference;
  for (const char* checkpointing : {"none", "reentrant", "nonreentrant", "nested"}) {
    Context ctx(recipe());
    TwoInputNetwork net(ctx);
    std::vector<float> losses;
    for (int step = 0; step < 4; ++step) {
      losses.push_back(net.step(x, y, targets, checkpointing));
      const runtime::StepCounts counts = ctx.end_step();
      EXPECT_EQ(counts.forward_updates, 1) << checkpointing;
      EXPECT_EQ(counts.backward_updates, 1) << checkpointing;
    }
    std::vector<float> state = losses;
    for (runtime::Linear* l : {&net.l0, &net.l1, &net.l2, &net.l3, &net.head}) {
      state.insert(state.end(), l->weight().values.begin(), l->weight().values.end());
      const runtime::ModuleMeta meta = l->meta();  // a host copy
      state.insert(state.end(), meta.forward.scale.begin(), meta.forward.scale.end());
      state.insert(state.end(), meta.backward.scale.begin(), meta.backward.scale.end());
    }
    if (reference.empty()) {
      reference.push_back(state);
    } else {
      EXPECT_EQ(state, reference[0]) << checkpointing;
    }
  }
}

// Inside a non-reentrant checkpoint: p = L1(a), q = L2(a), out = p + q; after it, z = L3(out).
// Backward visits L3, then the sum (the frame's, but it saved nothing: no unpack, no recompute),
// then L2 (recorded after L1): its backward begins, its first unpack recomputes the frame.
TEST(RuntimeGraph, AFrameRecomputesAtTheFirstUnpackOfANodeOfItsOwn) {
  Context ctx(recipe());
  runtime::Linear l0(ctx, "L0", 4, 4, 1), l1(ctx, "L1", 4, 4, 2), l2(ctx, "L2", 4, 4, 3), l3(ctx, "L3", 4, 4, 4);
  Tensor z;
  {
    runtime::Autocast fp8(ctx);
    const Tensor a = l0.forward(ctx.input(random_matrix(2, 4, 8)));
    const Tensor out = runtime::checkpoint(
        ctx, CheckpointMode::NonReentrant,
        [&](const std::vector<Tensor>& in) {
          const Tensor p = l1.forward(in[0]);
          const Tensor q = l2.forward(in[0]);
          return runtime::add(ctx, p, q);
        },
        {a});
    z = l3.forward(out);
  }
  std::vector<runtime::FiredEvent> log;
  ctx.log_events(&log);
  ctx.backward(z, random_matrix(2, 4, 9));
  ctx.log_events(nullptr);
  std::vector<std::string> seen;  // the backward begins and the recompute, in order
  for (const runtime::FiredEvent& fired : log) {
    if (const auto* begin = std::get_if<spec::ModuleBackwardBegin>(&fired.event)) {
      seen.push_back(static_cast<const Context&>(ctx).meta(begin->module).name);
    } else if (std::holds_alternative<spec::RecomputeEnter>(fired.event)) {
      seen.push_back("recompute");
    }
  }
  EXPECT_EQ(seen, (std::vector<std::string>{"L3", "L2", "recompute", "L1", "L0"}));
  const runtime::StepCounts counts = ctx.end_step();
  EXPECT_EQ(counts.forward_updates, 1);
  EXPECT_EQ(counts.backward_updates, 1);
}

// b = L1(a) is recorded but feeds nothing the loss reads: torch would never run its backward,
// which the table would count. backward refuses before any event, and the step ends cleanly.
TEST(RuntimeGraph, ANodeThatDoesNotLeadToTheLossIsRefusedBeforeAnyEvent) {
  Context ctx(recipe());
  runtime::Linear l0(ctx, "L0", 4, 4, 1), l1(ctx, "L1", 4, 4, 2), l2(ctx, "L2", 4, 4, 3);
  Tensor loss;
  {
    runtime::Autocast fp8(ctx);
    const Tensor a = l0.forward(ctx.input(random_matrix(2, 4, 10)));
    (void)l1.forward(a);
    loss = l2.forward(a);
  }
  std::vector<runtime::FiredEvent> log;
  ctx.log_events(&log);
  try {
    ctx.backward(loss, random_matrix(2, 4, 11));
    ADD_FAILURE() << "no MisuseError";
  } catch (const runtime::MisuseError& e) {
    EXPECT_NE(std::string(e.what()).find("does not lead to the loss"), std::string::npos) << e.what();
  }
  ctx.log_events(nullptr);
  EXPECT_TRUE(log.empty());
  const Tensor other = ctx.input(random_matrix(2, 4, 12));
  EXPECT_THROW(ctx.backward(other, random_matrix(2, 4, 13)), runtime::MisuseError);  // not this graph's
  EXPECT_EQ(ctx.end_step().backward_updates, 0);
}

// A reentrant checkpoint whose function reads only one of its two inputs passes the other no
// gradient. torch still runs the node that wrote it (its engine follows the graph) and TE's
// autograd Functions get zeros: the Linear that wrote it runs its backward with a zero gradient
// (its weight gradient stays zero; the step still makes one backward update), where the runtime
// threw a logic_error about a tensor without a gradient.
TEST(RuntimeGraph, ACheckpointInputItsFunctionDoesNotReadGetsAZeroGradient) {
  Context ctx(recipe());
  runtime::Linear read(ctx, "read", 4, 4, 1), unread(ctx, "unread", 4, 4, 2), inside(ctx, "inside", 4, 4, 3);
  const Tensor x = ctx.input(random_matrix(2, 4, 20));
  Tensor loss;
  {
    runtime::Autocast fp8(ctx);
    const Tensor a = read.forward(x), b = unread.forward(x);
    loss = runtime::checkpoint(ctx, CheckpointMode::Reentrant,
                               [&](const std::vector<Tensor>& in) { return inside.forward(in[0]); }, {a, b});
  }
  std::vector<runtime::FiredEvent> log;
  ctx.log_events(&log);
  ctx.backward(loss, random_matrix(2, 4, 21));
  ctx.log_events(nullptr);
  EXPECT_EQ(module_backwards(log), (std::vector<spec::ModuleId>{inside.id(), unread.id(), read.id()}));
  EXPECT_EQ(unread.weight_grad().to_host(), Matrix(4, 4));
  EXPECT_NE(read.weight_grad().to_host(), Matrix(4, 4));
  const runtime::StepCounts counts = ctx.end_step();
  EXPECT_EQ(counts.forward_updates, 1);
  EXPECT_EQ(counts.backward_updates, 1);
}

// LayerNormLinear's fp32 path (outside FP8) against the same function in double: its
// normalisation, then x Wᵀ, and the gradients of x, W, gamma and beta.
TEST(RuntimeGraph, LayerNormLinearsGradientsAreItsFunctionsInDouble) {
  const std::size_t rows = 3, in = 5, out = 4;
  Context ctx(recipe());
  runtime::LayerNormLinear layer(ctx, "LNL", in, out, 1);
  layer.gamma() = random_matrix(1, in, 2);
  layer.beta() = random_matrix(1, in, 3);
  const Tensor x = ctx.input(random_matrix(rows, in, 4));
  const Tensor y = layer.forward(x);
  const Matrix G = random_matrix(rows, out, 5);
  ctx.backward(y, G);

  const auto as_double = [](const Matrix& m) { return std::vector<double>(m.values.begin(), m.values.end()); };
  const std::vector<double> xd = as_double(x.value), gamma = as_double(layer.gamma()), beta = as_double(layer.beta());
  const std::vector<double> w = as_double(layer.weight()), g = as_double(G);
  std::vector<double> n(rows * in), mean(rows), rstd(rows);
  kernels::layer_norm_forward(xd.data(), rows, in, gamma.data(), beta.data(), 1e-5, n.data(), mean.data(), rstd.data());
  std::vector<double> dn(rows * in, 0.0), dw(out * in, 0.0);
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t o = 0; o < out; ++o) {
      double yv = 0;
      for (std::size_t i = 0; i < in; ++i) {
        yv += n[r * in + i] * w[o * in + i];
        dn[r * in + i] += g[r * out + o] * w[o * in + i];
        dw[o * in + i] += g[r * out + o] * n[r * in + i];
      }
      EXPECT_NEAR(y.value.at(r, o), yv, 1e-5 * (1 + std::abs(yv)));
    }
  }
  std::vector<double> dx(rows * in), dgamma(in, 0.0), dbeta(in, 0.0);
  kernels::layer_norm_backward(xd.data(), dn.data(), rows, in, gamma.data(), mean.data(), rstd.data(), dx.data(),
                               dgamma.data(), dbeta.data());
  const Matrix dx_runtime = ctx.gradient(x);
  for (std::size_t i = 0; i < dx.size(); ++i) EXPECT_NEAR(dx_runtime.values[i], dx[i], 1e-4 * (1 + std::abs(dx[i])));
  for (std::size_t i = 0; i < dw.size(); ++i) EXPECT_NEAR(layer.weight_grad().values[i], dw[i], 1e-4 * (1 + std::abs(dw[i])));
  for (std::size_t i = 0; i < in; ++i) {
    EXPECT_NEAR(layer.gamma_grad().values[i], dgamma[i], 1e-4 * (1 + std::abs(dgamma[i])));
    EXPECT_NEAR(layer.beta_grad().values[i], dbeta[i], 1e-4 * (1 + std::abs(dbeta[i])));
  }
}

TEST(RuntimeGraph, OpsRefuseBadShapesAndTargetsBeforeRecording) {
  Context ctx(recipe());
  const Tensor a = ctx.input(Matrix(2, 3)), b = ctx.input(Matrix(3, 2));
  EXPECT_THROW(runtime::add(ctx, a, b), std::invalid_argument);
  EXPECT_THROW(runtime::causal_attention(ctx, ctx.input(Matrix(4, 7)), 2), std::invalid_argument);
  EXPECT_THROW(runtime::causal_attention(ctx, ctx.input(Matrix(5, 6)), 2), std::invalid_argument);
  EXPECT_THROW(runtime::cross_entropy(ctx, a, {0, 3}), std::invalid_argument);
  EXPECT_THROW(runtime::cross_entropy(ctx, a, {0}), std::invalid_argument);
  runtime::Embedding embedding(ctx, "E", 4, 2);
  EXPECT_THROW(embedding.forward({0, 4}), std::invalid_argument);
  Matrix nan(2, 3);
  nan.values[1] = std::nanf("");
  EXPECT_THROW(runtime::gelu(ctx, ctx.input(nan)), std::invalid_argument);
  EXPECT_FALSE(ctx.has_recorded());
}

}  // namespace
}  // namespace fp8sm
