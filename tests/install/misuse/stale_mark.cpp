// discard_since with a mark it cannot take: one of an earlier step, a default one, one of
// another context, one past nodes discarded since. Each is a MisuseError, and nothing is
// discarded (the graph still trains with 1/1 updates).
#include "misuse_check.hpp"

int main() {
  using namespace misuse;
  rt::Recipe recipe;
  recipe.reduce_amax = false;  // L0 runs again in the region after its first run is discarded
  rt::Context ctx(recipe), other(recipe);
  rt::Linear l0(ctx, "L0", 4, 4, 1), l1(ctx, "L1", 4, 2, 2);
  const rt::Context::TapeMark of_an_earlier_step = ctx.mark();
  expect_usable(ctx, l0, l1, "a first step");

  const rt::Tensor x = ctx.input(rt::Matrix(2, 4, 0.5f));
  rt::Autocast fp8(ctx);
  const rt::Context::TapeMark before_h = ctx.mark();
  const rt::Tensor h = rt::relu(ctx, l0.forward(x));
  const rt::Context::TapeMark after_h = ctx.mark();
  expect_throw<rt::MisuseError>("a mark of an earlier step", [&] { ctx.discard_since(of_an_earlier_step); },
                                {"earlier step"});
  expect_throw<rt::MisuseError>("a default mark", [&] { ctx.discard_since(rt::Context::TapeMark{}); },
                                {"not made by mark()"});
  expect_throw<rt::MisuseError>("a mark of another context", [&] { ctx.discard_since(other.mark()); },
                                {"another context"});
  if (!ctx.has_recorded()) fail("a refused mark dropped the graph");

  // A valid mark discards; one taken after what it dropped is refused, even once as much is
  // recorded again.
  ctx.discard_since(before_h);
  const rt::Tensor h2 = rt::relu(ctx, l0.forward(x));
  expect_throw<rt::MisuseError>("a mark past nodes discarded since", [&] { ctx.discard_since(after_h); },
                                {"past what the graph holds"});
  const rt::Tensor y = l1.forward(h2);
  fp8.close();
  ctx.backward(y, rt::Matrix(2, 2, 1.0f));
  const rt::StepCounts counts = ctx.end_step();
  if (counts.forward_updates != 1 || counts.backward_updates != 1) {
    fail(fmt::format("the step with refused marks made {}/{} updates", counts.forward_updates, counts.backward_updates));
  }
  (void)h;
  expect_usable(ctx, l0, l1, "after refused marks");
  return verdict();
}
