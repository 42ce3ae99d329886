// A module destroyed before the backward of a graph that holds its nodes: the nodes share the
// module's parameters, so the backward runs as if it were still there (as a torch graph keeps
// its parameters alive), where it read a destroyed object before.
#include <memory>

#include "misuse_check.hpp"

int main() {
  using namespace misuse;
  rt::Context ctx(rt::Recipe{});
  rt::Linear l0(ctx, "L0", 4, 4, 1), l1(ctx, "L1", 4, 2, 2);
  auto middle = std::make_unique<rt::Linear>(ctx, "M", 4, 4, 3);
  auto norm = std::make_unique<rt::LayerNormLinear>(ctx, "LN", 4, 4, 4);
  const rt::Tensor x = ctx.input(rt::Matrix(2, 4, 0.5f));
  rt::Tensor y;
  {
    rt::Autocast fp8(ctx);
    y = l1.forward(norm->forward(middle->forward(l0.forward(x))));
  }
  middle.reset();
  norm.reset();
  try {
    ctx.backward(y, rt::Matrix(2, 2, 1.0f));
    const rt::StepCounts counts = ctx.end_step();
    if (counts.forward_updates != 1 || counts.backward_updates != 1) fail("the step did not make 1/1 updates");
    if (ctx.gradient(x).rows != 2) fail("the input's gradient did not come through the destroyed modules");
    fmt::print("ok: a backward through modules destroyed since their forward\n");
  } catch (const std::exception& e) {
    fail(std::string("a backward through destroyed modules threw: ") + e.what());
  }
  expect_usable(ctx, l0, l1, "after destroyed modules");
  return verdict();
}
