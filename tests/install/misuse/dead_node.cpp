// An op whose output leads nowhere: torch never runs its backward, while the table would count
// its events. In the graph it is refused at backward before any event (MisuseError); inside a
// reentrant checkpoint its forward ran without grad and recorded nothing, so it is found when
// the recompute records it: a CheckpointError, before the recompute's backward (where a node
// without a gradient was a std::logic_error).
#include "misuse_check.hpp"

int main() {
  using namespace misuse;
  rt::Context ctx(rt::Recipe{});
  rt::Linear l0(ctx, "L0", 4, 4, 1), l1(ctx, "L1", 4, 2, 2), unused(ctx, "U", 4, 4, 3);
  std::vector<rt::FiredEvent> events;
  {
    const rt::Tensor x = ctx.input(rt::Matrix(2, 4, 0.5f));
    rt::Tensor y;
    {
      rt::Autocast fp8(ctx);
      unused.forward(x);  // leads nowhere
      y = l1.forward(l0.forward(x));
    }
    ctx.log_events(&events);
    expect_throw<rt::MisuseError>("a node that does not lead to the loss",
                                  [&] { ctx.backward(y, rt::Matrix(2, 2, 1.0f)); }, {"does not lead to the loss"});
    if (!events.empty()) fail("events fired before the refusal of a node leading nowhere");
    ctx.log_events(nullptr);
  }
  expect_usable(ctx, l0, l1, "after a node leading nowhere");

  {
    const rt::Tensor x = ctx.input(rt::Matrix(2, 4, 0.5f));
    rt::Tensor y;
    {
      rt::Autocast fp8(ctx);
      y = l1.forward(rt::checkpoint(ctx, rt::CheckpointMode::Reentrant,
                                    [&](const std::vector<rt::Tensor>& in) {
                                      unused.forward(in[0]);  // leads nowhere
                                      return l0.forward(in[0]);
                                    },
                                    {x}));
    }
    expect_throw<rt::CheckpointError>("a reentrant recompute recording a node that leads nowhere",
                                      [&] { ctx.backward(y, rt::Matrix(2, 2, 1.0f)); },
                                      {"recompute of a reentrant checkpoint", "does not lead to the loss"});
  }
  expect_usable(ctx, l0, l1, "after a recompute with a node leading nowhere");
  return verdict();
}
