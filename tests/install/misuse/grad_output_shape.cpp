// A backward whose grad_output is not the loss's shape: refused with MisuseError before any
// event fires (the table's events are logged to see that none did), for a Tensor loss and on
// the chain; the right gradient then runs the pass as usual.
#include "misuse_check.hpp"

int main() {
  using namespace misuse;
  rt::Context ctx(rt::Recipe{});
  rt::Linear l0(ctx, "L0", 4, 4, 1), l1(ctx, "L1", 4, 2, 2);
  std::vector<rt::FiredEvent> events;

  const rt::Tensor x = ctx.input(rt::Matrix(3, 4, 0.5f));
  rt::Tensor y;
  {
    rt::Autocast fp8(ctx);
    y = l1.forward(rt::relu(ctx, l0.forward(x)));
  }
  ctx.log_events(&events);
  expect_throw<rt::MisuseError>("a grad_output of another shape than the loss",
                                [&] { ctx.backward(y, rt::Matrix(2, 2, 1.0f)); }, {"grad_output is 2 x 2, the loss 3 x 2"});
  if (!events.empty()) fail(fmt::format("{} table events fired before the refusal", events.size()));
  ctx.log_events(nullptr);
  ctx.backward(y, rt::Matrix(3, 2, 1.0f));
  const rt::StepCounts counts = ctx.end_step();
  if (counts.forward_updates != 1 || counts.backward_updates != 1) fail("the step after the refusal did not make 1/1 updates");

  // The chain's backward takes the gradient of its last output.
  {
    rt::Autocast fp8(ctx);
    l1.forward(rt::relu(ctx, l0.forward(rt::Matrix(3, 4, 0.5f))));
  }
  ctx.log_events(&events);
  expect_throw<rt::MisuseError>("a chain's grad_output of another shape",
                                [&] { ctx.backward(rt::Matrix(3, 4, 1.0f)); }, {"grad_output is 3 x 4, the loss 3 x 2"});
  if (!events.empty()) fail(fmt::format("{} table events fired before the chain's refusal", events.size()));
  ctx.log_events(nullptr);
  ctx.backward(rt::Matrix(3, 2, 1.0f));
  expect_usable(ctx, l0, l1, "after a refused grad_output");
  return verdict();
}
