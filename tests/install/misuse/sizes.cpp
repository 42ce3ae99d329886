// Sizes that overflow: a module whose parameters cannot be addressed is refused with
// std::invalid_argument naming it and the sizes (4 x 2^62 floats wrapped to 0 values before),
// and adds nothing to the context.
#include <cstddef>

#include "misuse_check.hpp"

int main() {
  using namespace misuse;
  rt::Context ctx(rt::Recipe{});
  const std::size_t huge = std::size_t{1} << 62;
  const std::vector<std::string> words = {"do not fit in memory"};
  expect_throw<std::invalid_argument>("Linear(4, 2^62)", [&] { rt::Linear(ctx, "H", 4, huge); },
                                      {"Linear H: weight: 4611686018427387904 x 4 values do not fit in memory"});
  expect_throw<std::invalid_argument>("LayerNormLinear(2^62, 4)", [&] { rt::LayerNormLinear(ctx, "N", huge, 4); }, words);
  expect_throw<std::invalid_argument>("LayerNorm(2^62)", [&] { rt::LayerNorm(ctx, "LN", huge); }, words);
  expect_throw<std::invalid_argument>("Embedding(2^40, 2^40)",
                                      [&] { rt::Embedding(ctx, "E", std::size_t{1} << 40, std::size_t{1} << 40); }, words);
  expect_throw<std::invalid_argument>("Matrix(2^40, 2^40)", [&] { rt::Matrix(std::size_t{1} << 40, std::size_t{1} << 40); },
                                      words);
  if (ctx.module_count() != 0) fail(fmt::format("refused modules left {} modules in the context", ctx.module_count()));
  rt::Linear l0(ctx, "L0", 4, 4, 1), l1(ctx, "L1", 4, 2, 2);
  if (l0.id() != 0) fail("the first module after the refusals is not module 0");
  expect_usable(ctx, l0, l1, "after refused sizes");
  return verdict();
}
