// FP8 GEMM through cuBLASLt: c (m x n, row-major fp32) = dequant(A) dequant(B)ᵀ with A given as
// m x k codes and B as n x k codes (both K-contiguous, the "TN" layout of kernels::gemm_tn),
// per-tensor scale_inv read from device memory, fp32 accumulation. E4M3 x E4M3 for the
// forward, E5M2 x E4M3 (either order) for gradients; cuBLASLt has no E5M2 x E5M2.
//
// In cuBLASLt's column-major terms the row-major c is cᵀ (n x m) = B · Aᵀ, i.e. op(B) = T on
// the k x n column-major view of B and op(A) = N on the k x m view of A: the TN case FP8 needs.
// cuBLASLt sums in its own order: results agree with the reference within the tolerance of
// kernels/README.md, not bit for bit (Device::gemm_tn_reference is the bit-exact one).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/fp8.hpp"

namespace fp8sm::kernels::cuda {

class CublasLtGemm {
 public:
  // Throws std::runtime_error when cuBLASLt cannot start (no GPU, no driver).
  CublasLtGemm();
  ~CublasLtGemm();
  CublasLtGemm(const CublasLtGemm&) = delete;
  CublasLtGemm& operator=(const CublasLtGemm&) = delete;

  // Whether cuBLASLt's FP8 kernels take this problem: every dimension a multiple of 16 (its
  // alignment rule for FP8) and not E5M2 x E5M2.
  static bool supports(std::size_t m, std::size_t n, std::size_t k, Format a_format, Format b_format);

  // All pointers are device pointers; asynchronous on `stream`. Throws std::invalid_argument
  // for an unsupported problem and std::runtime_error when cuBLASLt fails or finds no algorithm.
  void gemm_tn(const std::uint8_t* a, Format a_format, const float* a_scale_inv, const std::uint8_t* b,
               Format b_format, const float* b_scale_inv, std::size_t m, std::size_t n, std::size_t k, float* c,
               void* stream = nullptr);

 private:
  void* handle_ = nullptr;     // cublasLtHandle_t
  void* workspace_ = nullptr;  // device memory for cuBLASLt's split-k and the like
  std::size_t workspace_bytes_ = 0;
};

}  // namespace fp8sm::kernels::cuda
