// The transformer layers' CPU reference (kernels/layer_math.hpp): each backward, in double,
// against central finite differences of its forward on tiny shapes; the float instantiation
// (what the runtime runs) against the double one; and the forwards against values computed
// here from their definitions.
#include <gtest/gtest.h>

#include <cmath>
#include <algorithm>
#include <functional>
#include <limits>
#include <random>
#include <vector>

#include "kernels/layer_math.hpp"
#include "kernels/portable_math.hpp"

namespace fp8sm::kernels {
namespace {

using Vector = std::vector<double>;

Vector random_vector(std::size_t n, std::uint64_t seed, double scale = 1.0) {
  std::mt19937_64 random(seed);
  std::normal_distribution<double> normal(0.0, scale);
  Vector v(n);
  for (double& x : v) x = normal(random);
  return v;
}

// Σ weights·f(x), the scalar whose gradient a backward with output gradient `weights` computes.
double weighted(const Vector& f, const Vector& weights) {
  double sum = 0;
  for (std::size_t i = 0; i < f.size(); ++i) sum += f[i] * weights[i];
  return sum;
}

// d/dx_i of loss(x), by central differences.
Vector numeric_gradient(const std::function<double(const Vector&)>& loss, Vector x, double h = 1e-6) {
  Vector g(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double keep = x[i];
    x[i] = keep + h;
    const double up = loss(x);
    x[i] = keep - h;
    const double down = loss(x);
    x[i] = keep;
    g[i] = (up - down) / (2 * h);
  }
  return g;
}

void expect_close(const Vector& analytic, const Vector& numeric, double tolerance, const char* what) {
  ASSERT_EQ(analytic.size(), numeric.size()) << what;
  for (std::size_t i = 0; i < analytic.size(); ++i) {
    EXPECT_NEAR(analytic[i], numeric[i], tolerance * (1.0 + std::abs(numeric[i]))) << what << " at " << i;
  }
}

TEST(LayerMath, GeluIsItsDefinitionAndItsBackwardItsDerivative) {
  const Vector x = random_vector(37, 1, 2.0);
  Vector y(x.size());
  gelu_forward(x.data(), y.data(), x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    EXPECT_NEAR(y[i], 0.5 * x[i] * (1.0 + std::erf(x[i] / std::sqrt(2.0))), 1e-15);
  }
  const Vector dy = random_vector(x.size(), 2);
  Vector dx(x.size());
  gelu_backward(x.data(), dy.data(), dx.data(), x.size());
  const auto loss = [&](const Vector& at) {
    Vector out(at.size());
    gelu_forward(at.data(), out.data(), at.size());
    return weighted(out, dy);
  };
  expect_close(dx, numeric_gradient(loss, x), 1e-7, "gelu dx");
}

TEST(LayerMath, LayerNormBackwardIsItsForwardsGradient) {
  const std::size_t rows = 3, cols = 5;
  const double eps = 1e-5;
  const Vector x = random_vector(rows * cols, 3, 1.5);
  const Vector gamma = random_vector(cols, 4);
  const Vector beta = random_vector(cols, 5);
  const Vector dy = random_vector(rows * cols, 6);
  Vector y(rows * cols), mean(rows), rstd(rows);
  layer_norm_forward(x.data(), rows, cols, gamma.data(), beta.data(), eps, y.data(), mean.data(), rstd.data());
  // Row 0 by its definition.
  double mu = 0, var = 0;
  for (std::size_t c = 0; c < cols; ++c) mu += x[c] / cols;
  for (std::size_t c = 0; c < cols; ++c) var += (x[c] - mu) * (x[c] - mu) / cols;
  for (std::size_t c = 0; c < cols; ++c) EXPECT_NEAR(y[c], (x[c] - mu) / std::sqrt(var + eps) * gamma[c] + beta[c], 1e-12);

  Vector dx(rows * cols), dgamma(cols, 0.0), dbeta(cols, 0.0);
  layer_norm_backward(x.data(), dy.data(), rows, cols, gamma.data(), mean.data(), rstd.data(), dx.data(), dgamma.data(),
                      dbeta.data());
  const auto loss_of = [&](const Vector& at_x, const Vector& at_gamma, const Vector& at_beta) {
    Vector out(rows * cols), m(rows), r(rows);
    layer_norm_forward(at_x.data(), rows, cols, at_gamma.data(), at_beta.data(), eps, out.data(), m.data(), r.data());
    return weighted(out, dy);
  };
  expect_close(dx, numeric_gradient([&](const Vector& v) { return loss_of(v, gamma, beta); }, x), 1e-6, "dx");
  expect_close(dgamma, numeric_gradient([&](const Vector& v) { return loss_of(x, v, beta); }, gamma), 1e-6, "dgamma");
  expect_close(dbeta, numeric_gradient([&](const Vector& v) { return loss_of(x, gamma, v); }, beta), 1e-6, "dbeta");
}

TEST(LayerMath, CausalAttentionBackwardIsItsForwardsGradient) {
  const std::size_t sequences = 2, length = 4, width = 3;
  const Vector qkv = random_vector(sequences * length * 3 * width, 7);
  const Vector dout = random_vector(sequences * length * width, 8);
  Vector out(sequences * length * width), p(sequences * length * length);
  causal_attention_forward(qkv.data(), sequences, length, width, out.data(), p.data());
  // Position 0 attends to itself alone: its output is its value; nothing above the diagonal.
  for (std::size_t c = 0; c < width; ++c) EXPECT_NEAR(out[c], qkv[2 * width + c], 1e-15);
  for (std::size_t i = 0; i < length; ++i) {
    double row = 0;
    for (std::size_t j = 0; j < length; ++j) {
      if (j > i) {
        EXPECT_EQ(p[i * length + j], 0.0);
      }
      row += p[i * length + j];
    }
    EXPECT_NEAR(row, 1.0, 1e-14);
  }
  Vector dqkv(qkv.size());
  causal_attention_backward(qkv.data(), p.data(), dout.data(), sequences, length, width, dqkv.data());
  const auto loss = [&](const Vector& at) {
    Vector o(out.size()), pp(p.size());
    causal_attention_forward(at.data(), sequences, length, width, o.data(), pp.data());
    return weighted(o, dout);
  };
  expect_close(dqkv, numeric_gradient(loss, qkv), 1e-6, "dqkv");
}

TEST(LayerMath, CrossEntropyBackwardIsItsForwardsGradient) {
  const std::size_t rows = 4, cols = 6;
  const Vector logits = random_vector(rows * cols, 9, 2.0);
  const std::vector<int> targets = {0, 5, 2, 2};
  Vector p(rows * cols);
  const double loss = softmax_cross_entropy_forward(logits.data(), rows, cols, targets.data(), p.data());
  double expected = 0;
  for (std::size_t r = 0; r < rows; ++r) {
    double total = 0;
    for (std::size_t c = 0; c < cols; ++c) total += std::exp(logits[r * cols + c]);
    expected -= std::log(std::exp(logits[r * cols + static_cast<std::size_t>(targets[r])]) / total) / rows;
  }
  EXPECT_NEAR(loss, expected, 1e-12);
  Vector dlogits(rows * cols);
  softmax_cross_entropy_backward(p.data(), rows, cols, targets.data(), 1.0, dlogits.data());
  const auto of = [&](const Vector& at) {
    Vector pp(at.size());
    return softmax_cross_entropy_forward(at.data(), rows, cols, targets.data(), pp.data());
  };
  expect_close(dlogits, numeric_gradient(of, logits), 1e-7, "dlogits");
}

// A row whose target is -1 counts for nothing: the loss and gradient of the other rows alone.
TEST(LayerMath, CrossEntropyLeavesOutRowsWithoutATarget) {
  const std::size_t cols = 3;
  const Vector logits = random_vector(3 * cols, 12);
  const std::vector<int> some = {2, -1, 0};
  Vector p(logits.size()), d(logits.size());
  const double loss = softmax_cross_entropy_forward(logits.data(), 3, cols, some.data(), p.data());
  softmax_cross_entropy_backward(p.data(), 3, cols, some.data(), 1.0, d.data());
  const Vector kept = {logits[0], logits[1], logits[2], logits[6], logits[7], logits[8]};
  const std::vector<int> kept_targets = {2, 0};
  Vector kp(kept.size()), kd(kept.size());
  EXPECT_DOUBLE_EQ(loss, softmax_cross_entropy_forward(kept.data(), 2, cols, kept_targets.data(), kp.data()));
  softmax_cross_entropy_backward(kp.data(), 2, cols, kept_targets.data(), 1.0, kd.data());
  for (std::size_t c = 0; c < cols; ++c) {
    EXPECT_DOUBLE_EQ(d[c], kd[c]);
    EXPECT_EQ(d[cols + c], 0.0);
    EXPECT_DOUBLE_EQ(d[2 * cols + c], kd[cols + c]);
  }
}

// What the runtime runs: the float instantiation, against the double one on the same inputs.
TEST(LayerMath, FloatAgreesWithDouble) {
  const std::size_t sequences = 2, length = 3, width = 4;
  const Vector qkv = random_vector(sequences * length * 3 * width, 10);
  const std::vector<float> qkv_f(qkv.begin(), qkv.end());
  Vector out(sequences * length * width), p(sequences * length * length);
  std::vector<float> out_f(out.size()), p_f(p.size());
  causal_attention_forward(qkv.data(), sequences, length, width, out.data(), p.data());
  causal_attention_forward(qkv_f.data(), sequences, length, width, out_f.data(), p_f.data());
  for (std::size_t i = 0; i < out.size(); ++i) EXPECT_NEAR(out_f[i], out[i], 1e-5 * (1 + std::abs(out[i])));
  const Vector x = random_vector(12, 11);
  const std::vector<float> x_f(x.begin(), x.end());
  Vector g(x.size());
  std::vector<float> g_f(x.size());
  gelu_forward(x.data(), g.data(), x.size());
  gelu_forward(x_f.data(), g_f.data(), x.size());
  for (std::size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g_f[i], g[i], 1e-6 * (1 + std::abs(g[i])));
}

// The float exp, log and erf that the CPU layers and their CUDA kernels share
// (portable_math.hpp), against the C library's double versions of the same float inputs.
double ulps_off(float got, double want) {
  const auto w = static_cast<float>(want);
  const double ulp = std::fabs(static_cast<double>(std::nextafter(w, std::numeric_limits<float>::infinity())) - w);
  return std::fabs(static_cast<double>(got) - want) / ulp;
}

TEST(PortableMath, ExpAndLogWithinTwoUlpsAndErfWithinTwoTenMillionths) {
  double worst_exp = 0, worst_log = 0, worst_erf = 0, worst_small_erf = 0;
  for (double x = -87.0; x <= 88.0; x += 0.000731) {
    const auto f = static_cast<float>(x);
    worst_exp = std::max(worst_exp, ulps_off(portable_exp(f), std::exp(static_cast<double>(f))));
  }
  for (double x = 1e-40; x <= 1e38; x *= 1.0007) {  // subnormals too
    const auto f = static_cast<float>(x);
    worst_log = std::max(worst_log, ulps_off(portable_log(f), std::log(static_cast<double>(f))));
  }
  for (double x = -6.0; x <= 6.0; x += 0.0001) {
    const auto f = static_cast<float>(x);
    const double exact = std::erf(static_cast<double>(f));
    worst_erf = std::max(worst_erf, std::fabs(portable_erf(f) - exact));
    if (std::fabs(f) < 0.5f && f != 0.0f) worst_small_erf = std::max(worst_small_erf, ulps_off(portable_erf(f), exact));
  }
  EXPECT_LE(worst_exp, 2.0);
  EXPECT_LE(worst_log, 2.0);
  EXPECT_LE(worst_erf, 2e-7);
  EXPECT_LE(worst_small_erf, 4.0);
}

TEST(PortableMath, TheirEdges) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(portable_exp(0.0f), 1.0f);
  EXPECT_EQ(portable_exp(89.0f), inf);
  EXPECT_EQ(portable_exp(-104.0f), 0.0f);
  EXPECT_EQ(portable_exp(-inf), 0.0f);
  EXPECT_TRUE(std::isnan(portable_exp(std::nanf(""))));
  EXPECT_EQ(portable_log(1.0f), 0.0f);
  EXPECT_EQ(portable_log(0.0f), -inf);
  EXPECT_EQ(portable_log(inf), inf);
  EXPECT_TRUE(std::isnan(portable_log(-1.0f)));
  EXPECT_EQ(portable_erf(0.0f), 0.0f);
  EXPECT_EQ(portable_erf(10.0f), 1.0f);
  EXPECT_EQ(portable_erf(-10.0f), -1.0f);
  EXPECT_EQ(portable_erf(-0.3f), -portable_erf(0.3f));
}

}  // namespace
}  // namespace fp8sm::kernels
