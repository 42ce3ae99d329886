// A module, and a scope on the heap, outliving the Context they were made with: using the module
// is a MisuseError naming it (not a use after free), destroying either is harmless, and another
// context trains as usual.
#include <memory>

#include "misuse_check.hpp"

int main() {
  using namespace misuse;
  auto context = std::make_unique<rt::Context>(rt::Recipe{});
  auto linear = std::make_unique<rt::Linear>(*context, "L0", 4, 4, 1);
  auto scope = std::make_unique<rt::Autocast>(*context);
  context.reset();

  expect_throw<rt::MisuseError>("Linear::forward after its Context was destroyed",
                                [&] { linear->forward(rt::Matrix(2, 4, 0.5f)); }, {"Linear L0", "Context was destroyed"});
  expect_throw<rt::MisuseError>("Linear::meta after its Context was destroyed", [&] { linear->meta(); },
                                {"Linear L0", "Context was destroyed"});
  if (linear->name() != "L0") fail("the module's name is gone with its context");
  expect_throw<rt::MisuseError>("Autocast::close after its Context was destroyed", [&] { scope->close(); },
                                {"autocast scope", "Context was destroyed"});
  scope.reset();  // the scope's destructor finds nothing to leave
  linear.reset();

  rt::Context fresh(rt::Recipe{});
  rt::Linear l0(fresh, "L0", 4, 4, 1), l1(fresh, "L1", 4, 2, 2);
  expect_usable(fresh, l0, l1, "a new context");
  return verdict();
}
