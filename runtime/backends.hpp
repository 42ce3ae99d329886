// A backend by name, for programs that choose at run time: "cpu", "cuda" (cuBLASLt GEMMs where
// they apply), "cuda-exact" (every GEMM bit for bit the CPU's) or "cuda-emulated" (the CUDA
// kernels run on the CPU by their host emulation: any machine, slow, bit for bit the CPU's).
#pragma once

#include <memory>
#include <string>

#include "runtime/backend.hpp"

namespace fp8sm::runtime {

// Throws std::invalid_argument for an unknown name, std::runtime_error (saying why) for a
// CUDA backend where this build has none or no GPU is usable.
std::unique_ptr<Backend> make_backend(const std::string& name);

// The same checks without making the backend (a program validates its options first).
void require_backend(const std::string& name);

}  // namespace fp8sm::runtime
