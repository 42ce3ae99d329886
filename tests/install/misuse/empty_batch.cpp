// A batch of no rows (or a matrix of no columns): refused where it enters, with
// std::invalid_argument saying it holds no values, instead of a logic_error about checkpoints
// at backward in a program that has none.
#include "misuse_check.hpp"

int main() {
  using namespace misuse;
  rt::Context ctx(rt::Recipe{});
  rt::Linear l0(ctx, "L0", 4, 4, 1), l1(ctx, "L1", 4, 2, 2);
  rt::Embedding embedding(ctx, "E", 8, 4, 3);
  const std::vector<std::string> words = {"0 x 4", "holds no values"};
  expect_throw<std::invalid_argument>("Context::input of a 0-row batch", [&] { ctx.input(rt::Matrix(0, 4)); }, words);
  expect_throw<std::invalid_argument>("Linear::forward of a 0-row batch on the chain",
                                      [&] { l0.forward(rt::Matrix(0, 4)); }, words);
  expect_throw<std::invalid_argument>("backward with a 0-row gradient", [&] { ctx.backward(rt::Matrix(0, 4)); }, words);
  expect_throw<std::invalid_argument>("Embedding::forward of no tokens", [&] { embedding.forward({}); }, {"no tokens"});
  expect_usable(ctx, l0, l1, "after empty batches");
  return verdict();
}
