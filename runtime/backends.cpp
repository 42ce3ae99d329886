#include "runtime/backends.hpp"

#include <fmt/core.h>

#include <stdexcept>

#include "runtime/device_backend.hpp"

#ifdef FP8SM_HAVE_CUDA
#include "runtime/cuda_backend.hpp"
#endif

namespace fp8sm::runtime {

void require_backend(const std::string& name) {
  if (name == "cpu" || name == "cuda-emulated") return;
  if (name == "cuda" || name == "cuda-exact") {
#ifdef FP8SM_HAVE_CUDA
    const std::string why = cuda_unavailable_reason();
    if (!why.empty()) throw std::runtime_error(fmt::format("backend {}: {}", name, why));
    return;
#else
    throw std::runtime_error(fmt::format(
        "backend {}: this build has no CUDA backend (the CUDA toolkit was not found when it was configured)", name));
#endif
  }
  throw std::invalid_argument(fmt::format("unknown backend '{}' (expected cpu, cuda, cuda-exact or cuda-emulated)", name));
}

std::unique_ptr<Backend> make_backend(const std::string& name) {
  require_backend(name);
  if (name == "cpu") return make_cpu_backend();
  if (name == "cuda-emulated") return make_emulated_cuda_backend();
#ifdef FP8SM_HAVE_CUDA
  return make_cuda_backend(name == "cuda" ? CudaGemm::Fast : CudaGemm::Exact);
#else
  throw std::logic_error(fmt::format("make_backend: {}", name));  // require_backend refused it
#endif
}

}  // namespace fp8sm::runtime
