// Values a program changed behind the runtime's back through their public fields: a matrix
// whose rows and cols do not match its values, a weight or a weight gradient replaced by one of
// another shape, a tensor whose value was replaced after it was computed. Each is refused where
// it is read (std::invalid_argument), or at backward before any event (MisuseError), never read
// past its values by a kernel.
#include "misuse_check.hpp"

int main() {
  using namespace misuse;
  rt::Context ctx(rt::Recipe{});
  rt::Linear l0(ctx, "L0", 4, 4, 1), l1(ctx, "L1", 4, 2, 2);

  rt::Matrix hollow;
  hollow.rows = 2;
  hollow.cols = 4;  // and no values
  expect_throw<std::invalid_argument>("a matrix whose rows and cols were set by hand", [&] { ctx.input(hollow); },
                                      {"a 2 x 4 matrix holds 0 values, not 8"});

  const rt::Matrix weight = l0.weight();
  l0.weight() = rt::Matrix(3, 3, 0.1f);
  expect_throw<std::invalid_argument>("a weight replaced by another shape", [&] { l0.forward(rt::Matrix(2, 4, 0.5f)); },
                                      {"Linear L0: weight: is 3 x 3, the module's is 4 x 4"});
  l0.weight() = weight;

  std::vector<rt::FiredEvent> events;
  {
    const rt::Tensor x = ctx.input(rt::Matrix(2, 4, 0.5f));
    rt::Tensor y;
    {
      rt::Autocast fp8(ctx);
      y = l1.forward(l0.forward(x));
    }
    const rt::Matrix gradient = l1.weight_grad();
    l1.weight_grad() = rt::Matrix();
    ctx.log_events(&events);
    expect_throw<std::invalid_argument>("a weight gradient replaced by an empty matrix",
                                        [&] { ctx.backward(y, rt::Matrix(2, 2, 1.0f)); }, {"L1's weight gradient"});
    if (!events.empty()) fail("events fired before the refusal of a replaced weight gradient");
    ctx.log_events(nullptr);
    l1.weight_grad() = gradient;
  }
  expect_usable(ctx, l0, l1, "after a replaced gradient");

  {
    const rt::Tensor x = ctx.input(rt::Matrix(2, 4, 0.5f));
    rt::Tensor y;
    {
      rt::Autocast fp8(ctx);
      rt::Tensor h = l0.forward(x);
      h.value = rt::Matrix(3, 4, 0.5f);  // a value of another shape under h's id
      y = l1.forward(h);
    }
    ctx.log_events(&events);
    expect_throw<rt::MisuseError>("a tensor whose value was replaced by another shape",
                                  [&] { ctx.backward(y, rt::Matrix(3, 2, 1.0f)); }, {"as 3 x 4, but it was written as 2 x 4"});
    if (!events.empty()) fail("events fired before the refusal of a replaced tensor");
    ctx.log_events(nullptr);
  }
  expect_usable(ctx, l0, l1, "after a replaced tensor");
  return verdict();
}
