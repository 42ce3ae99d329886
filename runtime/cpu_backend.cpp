// The CPU reference backend: the Backend's own operations (backend.cpp), each the kernels/
// reference of the same name, on host matrices.
#include "runtime/backend.hpp"

namespace fp8sm::runtime {

namespace {

class CpuBackend final : public Backend {
 public:
  std::string name() const override { return "cpu"; }
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend() { return std::make_unique<CpuBackend>(); }

}  // namespace fp8sm::runtime
