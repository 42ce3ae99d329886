// Tensors of two contexts mixed: each context numbers its own tensors, so a tensor of one
// would name another tensor in the other. Every operation refuses it with MisuseError.
#include "misuse_check.hpp"

int main() {
  using namespace misuse;
  rt::Context a(rt::Recipe{}), b(rt::Recipe{});
  rt::Linear la0(a, "A0", 4, 4, 1), la1(a, "A1", 4, 2, 2), lb(b, "B0", 4, 4, 3);
  const rt::Tensor xa = a.input(rt::Matrix(2, 4, 0.5f));
  const rt::Tensor xb = b.input(rt::Matrix(2, 4, 0.25f));  // the same id as xa, in b
  rt::Tensor ya;
  {
    rt::Autocast fp8(a);
    ya = la0.forward(xa);
  }
  a.backward(ya, rt::Matrix(2, 4, 1.0f));

  const std::vector<std::string> words = {"belongs to another context"};
  expect_throw<rt::MisuseError>("gradient of another context's tensor", [&] { a.gradient(xb); }, words);
  expect_throw<rt::MisuseError>("Linear::forward of another context's tensor", [&] { la0.forward(xb); }, words);
  expect_throw<rt::MisuseError>("Linear of context b on a tensor of a", [&] { lb.forward(xa); }, words);
  expect_throw<rt::MisuseError>("relu of another context's tensor", [&] { rt::relu(a, xb); }, words);
  expect_throw<rt::MisuseError>("add of tensors of two contexts", [&] { rt::add(a, xa, xb); }, words);
  expect_throw<rt::MisuseError>(
      "a checkpoint of another context's tensor",
      [&] { rt::checkpoint(a, rt::CheckpointMode::Reentrant, [&](const std::vector<rt::Tensor>& in) { return la0.forward(in[0]); }, {xb}); },
      words);
  expect_throw<rt::MisuseError>("backward from another context's loss",
                                [&] { a.backward(xb, rt::Matrix(2, 4, 1.0f)); }, words);
  rt::Tensor unmade;  // a program's own Tensor, not one a context made
  unmade.value = rt::Matrix(2, 4);
  unmade.id = 1;
  expect_throw<rt::MisuseError>("a tensor no context made", [&] { rt::relu(a, unmade); }, {"not made by a context"});
  expect_usable(a, la0, la1, "context a");
  return verdict();
}
