// Scopes left in an order Python's `with` cannot express: scopes on the heap destroyed outside
// in (the outer one is left as soon as the inner one is, not an exception thrown through
// unique_ptr's noexcept destructor), close() out of order (MisuseError, nothing changed), and a
// checkpoint's function returning with a scope it opened still open (MisuseError as the
// function's failure; the checkpoint leaves the scope for it).
#include <memory>

#include "misuse_check.hpp"

int main() {
  using namespace misuse;
  rt::Context ctx(rt::Recipe{});
  rt::Linear l0(ctx, "L0", 4, 4, 1), l1(ctx, "L1", 4, 2, 2);

  auto outer = std::make_unique<rt::Autocast>(ctx);
  auto inner = std::make_unique<rt::NoGrad>(ctx);
  expect_throw<rt::MisuseError>("close() of the outer scope first", [&] { outer->close(); },
                                {"autocast scope #0 left out of order", "no_grad scope #1"});
  outer.reset();  // abandoned: still open, inside it the no_grad
  if (ctx.autocast_depth() != 1 || ctx.grad_enabled()) fail("destroying the outer scope first left a scope early");
  inner.reset();  // leaves the no_grad, then the abandoned autocast
  if (ctx.autocast_depth() != 0 || !ctx.grad_enabled()) fail("the abandoned scope was not left after the inner one");
  else fmt::print("ok: scopes on the heap destroyed outside in are left inside out\n");

  const rt::Tensor x = ctx.input(rt::Matrix(2, 4, 0.5f));
  std::unique_ptr<rt::Autocast> leaked;
  expect_throw<rt::MisuseError>(
      "a checkpoint's function returning with a scope open",
      [&] {
        rt::Autocast fp8(ctx);
        rt::checkpoint(ctx, rt::CheckpointMode::Reentrant,
                       [&](const std::vector<rt::Tensor>& in) {
                         leaked = std::make_unique<rt::Autocast>(ctx, false);
                         return l0.forward(in[0]);
                       },
                       {x});
      },
      {"returned with the autocast scope", "still open"});
  if (ctx.autocast_depth() != 0) fail("the scope the function left open is still open");
  leaked.reset();  // left for it already: nothing to do
  expect_usable(ctx, l0, l1, "after scopes left out of order");
  return verdict();
}
