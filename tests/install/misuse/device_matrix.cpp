// A matrix in one backend's device memory handed to a context on another backend: refused with
// MisuseError (bring it to the host first), where the CPU backend read its empty host values.
#include "misuse_check.hpp"
#include "runtime/backends.hpp"

int main() {
  using namespace misuse;
  rt::Context device(rt::Recipe{}, rt::make_backend("cuda-emulated"));
  rt::Linear on_device(device, "D", 4, 4, 1);
  rt::Context host(rt::Recipe{});
  rt::Linear l0(host, "L0", 4, 4, 1), l1(host, "L1", 4, 2, 2);
  expect_throw<rt::MisuseError>("a device matrix as a CPU context's input", [&] { host.input(on_device.weight()); },
                                {"in device memory", "to_host()"});
  rt::Context second_device(rt::Recipe{}, rt::make_backend("cuda-emulated"));
  expect_throw<rt::MisuseError>("another device backend's matrix", [&] { second_device.input(on_device.weight()); },
                                {"another backend"});
  if (host.input(on_device.weight().to_host()).value.rows != 4) fail("the host copy was not taken");
  expect_usable(host, l0, l1, "after a refused device matrix");
  return verdict();
}
