// The CUDA backend of the runtime (built where the CUDA toolkit is; usable where a GPU is).
#pragma once

#include <memory>
#include <string>

#include "runtime/backend.hpp"

namespace fp8sm::runtime {

// Exact: every GEMM by the reference kernel, bit for bit the CPU backend. Fast: cuBLASLt where
// it takes the problem (results within the GEMM's documented tolerance of the CPU's).
enum class CudaGemm { Exact, Fast };

// Throws std::runtime_error saying why when no GPU is usable.
std::unique_ptr<Backend> make_cuda_backend(CudaGemm gemm = CudaGemm::Fast);
// Empty when a GPU is usable; else the CUDA runtime's reason.
std::string cuda_unavailable_reason();

}  // namespace fp8sm::runtime
