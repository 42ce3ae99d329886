// One rule for NaN and infinity (runtime/README.md, "Errors"): every operation refuses a
// tensor it reads that holds one, with std::invalid_argument naming the operation and where
// (relu turned NaN into 0 silently while gelu threw). Nothing is recorded.
#include <limits>

#include "misuse_check.hpp"

int main() {
  using namespace misuse;
  rt::Context ctx(rt::Recipe{});
  rt::Linear l0(ctx, "L0", 4, 4, 1), l1(ctx, "L1", 4, 2, 2);
  rt::LayerNorm norm(ctx, "N", 4);
  const rt::Tensor good = ctx.input(rt::Matrix(2, 4, 0.5f));
  rt::Tensor bad = good;
  bad.value.at(1, 2) = std::numeric_limits<float>::quiet_NaN();  // a tensor of the graph gone bad
  const std::vector<std::string> nan = {"NaN at (1, 2)"};
  expect_throw<std::invalid_argument>("relu of a NaN", [&] { rt::relu(ctx, bad); }, {"relu: input: NaN at (1, 2)"});
  expect_throw<std::invalid_argument>("relu of a NaN on the chain", [&] { rt::relu(ctx, bad.value); }, nan);
  expect_throw<std::invalid_argument>("gelu of a NaN", [&] { rt::gelu(ctx, bad); }, {"gelu: input: NaN at (1, 2)"});
  expect_throw<std::invalid_argument>("add of a NaN", [&] { rt::add(ctx, good, bad); }, {"add: second term: NaN"});
  expect_throw<std::invalid_argument>("LayerNorm of a NaN", [&] { norm.forward(bad); }, nan);
  expect_throw<std::invalid_argument>("Linear of a NaN", [&] { l0.forward(bad); }, nan);
  bad.value.at(1, 2) = std::numeric_limits<float>::infinity();
  expect_throw<std::invalid_argument>("relu of an infinity", [&] { rt::relu(ctx, bad); }, {"infinity at (1, 2)"});
  expect_throw<std::invalid_argument>("Context::input of an infinity", [&] { ctx.input(bad.value); }, {"infinity"});
  if (ctx.has_recorded()) fail("a refused operation recorded a node");
  expect_usable(ctx, l0, l1, "after refused NaN and infinity");
  return verdict();
}
