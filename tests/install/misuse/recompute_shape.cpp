// A checkpointed function that computes something else when it is run again: a reentrant
// recompute returning another shape, a non-reentrant recompute recording a node of another
// shape at a slot. Both are a CheckpointError naming the checkpoint's rule (not a kernel's
// complaint about inner dimensions), the pass ends as a failed one, and the context trains on.
#include "misuse_check.hpp"

int main() {
  using namespace misuse;
  rt::Context ctx(rt::Recipe{});
  rt::Linear l0(ctx, "L0", 4, 4, 1), l1(ctx, "L1", 4, 2, 2), narrow(ctx, "N", 4, 3, 3);

  int calls = 0;
  auto returns_another_shape = [&](const std::vector<rt::Tensor>& in) {
    const rt::Tensor h = l0.forward(in[0]);
    return ++calls == 1 ? h : narrow.forward(h);  // 2 x 4 in the forward, 2 x 3 in the recompute
  };
  {
    const rt::Tensor x = ctx.input(rt::Matrix(2, 4, 0.5f));
    rt::Tensor y;
    {
      rt::Autocast fp8(ctx);
      y = l1.forward(rt::checkpoint(ctx, rt::CheckpointMode::Reentrant, returns_another_shape, {x}));
    }
    expect_throw<rt::CheckpointError>("a reentrant recompute returning another shape",
                                      [&] { ctx.backward(y, rt::Matrix(2, 2, 1.0f)); },
                                      {"returned a 2 x 3 tensor, its forward a 2 x 4 one"});
  }
  expect_usable(ctx, l0, l1, "after a reentrant recompute of another shape");

  calls = 0;
  auto records_another_shape = [&](const std::vector<rt::Tensor>& in) {
    // The forward reads its input; the recompute a batch of another size (a sum saves nothing,
    // so L0's node is the frame's one slot).
    const bool forward = ++calls == 1;
    const rt::Tensor h = l0.forward(forward ? in[0] : ctx.input(rt::Matrix(3, 4, 0.5f)));
    return forward ? rt::add(ctx, h, in[0]) : h;
  };
  {
    const rt::Tensor x = ctx.input(rt::Matrix(2, 4, 0.5f));
    rt::Tensor y;
    {
      rt::Autocast fp8(ctx);
      const rt::Tensor h = rt::checkpoint(ctx, rt::CheckpointMode::NonReentrant, records_another_shape, {x});
      y = l1.forward(h);
    }
    expect_throw<rt::CheckpointError>("a non-reentrant recompute recording another shape at a slot",
                                      [&] { ctx.backward(y, rt::Matrix(2, 2, 1.0f)); }, {"recorded another node at slot"});
  }
  expect_usable(ctx, l0, l1, "after a non-reentrant recompute of another shape");
  return verdict();
}
