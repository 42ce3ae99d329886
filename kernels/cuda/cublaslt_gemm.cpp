#include "kernels/cuda/cublaslt_gemm.hpp"

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <fmt/core.h>

#include <memory>
#include <stdexcept>
#include <string>

#include "kernels/cuda/cuda_device.hpp"

namespace fp8sm::kernels::cuda {

namespace {

void check_lt(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw std::runtime_error(fmt::format("{}: cuBLASLt status {}", what, static_cast<int>(status)));
  }
}

cudaDataType_t data_type(Format format) { return format == Format::E4M3 ? CUDA_R_8F_E4M3 : CUDA_R_8F_E5M2; }

// RAII for the descriptors of one call.
struct Descriptors {
  cublasLtMatmulDesc_t matmul = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulPreference_t preference = nullptr;
  ~Descriptors() {
    if (preference) cublasLtMatmulPreferenceDestroy(preference);
    if (c) cublasLtMatrixLayoutDestroy(c);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (matmul) cublasLtMatmulDescDestroy(matmul);
  }
};

constexpr std::size_t kWorkspaceBytes = std::size_t{32} << 20;

}  // namespace

CublasLtGemm::CublasLtGemm() {
  const DeviceStatus& device = device_status();
  if (!device.usable) throw std::runtime_error(fmt::format("CublasLtGemm: {}", device.why));
  cublasLtHandle_t handle = nullptr;
  check_lt(cublasLtCreate(&handle), "cublasLtCreate");
  handle_ = handle;
  if (cudaMalloc(&workspace_, kWorkspaceBytes) != cudaSuccess) {
    cublasLtDestroy(handle);
    throw std::runtime_error("CublasLtGemm: cannot allocate the workspace");
  }
  workspace_bytes_ = kWorkspaceBytes;
}

CublasLtGemm::~CublasLtGemm() {
  if (workspace_ != nullptr) cudaFree(workspace_);
  if (handle_ != nullptr) cublasLtDestroy(static_cast<cublasLtHandle_t>(handle_));
}

bool CublasLtGemm::supports(std::size_t m, std::size_t n, std::size_t k, Format a_format, Format b_format) {
  const bool aligned = m % 16 == 0 && n % 16 == 0 && k % 16 == 0 && m > 0 && n > 0 && k > 0;
  return aligned && !(a_format == Format::E5M2 && b_format == Format::E5M2);
}

void CublasLtGemm::gemm_tn(const std::uint8_t* a, Format a_format, const float* a_scale_inv, const std::uint8_t* b,
                           Format b_format, const float* b_scale_inv, std::size_t m, std::size_t n, std::size_t k,
                           float* c, void* stream) {
  if (!supports(m, n, k, a_format, b_format)) {
    throw std::invalid_argument(fmt::format("CublasLtGemm: {} x {} x {} in {} x {} is not an FP8 problem cuBLASLt takes",
                                            m, n, k, format_name(a_format), format_name(b_format)));
  }
  Descriptors d;
  check_lt(cublasLtMatmulDescCreate(&d.matmul, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate");
  const cublasOperation_t transpose = CUBLAS_OP_T;
  const cublasOperation_t keep = CUBLAS_OP_N;
  // cuBLASLt's A is our B (k x n column-major, transposed), its B our A (k x m, as it is).
  check_lt(cublasLtMatmulDescSetAttribute(d.matmul, CUBLASLT_MATMUL_DESC_TRANSA, &transpose, sizeof transpose), "TRANSA");
  check_lt(cublasLtMatmulDescSetAttribute(d.matmul, CUBLASLT_MATMUL_DESC_TRANSB, &keep, sizeof keep), "TRANSB");
  check_lt(cublasLtMatmulDescSetAttribute(d.matmul, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &b_scale_inv, sizeof b_scale_inv),
           "A_SCALE_POINTER");
  check_lt(cublasLtMatmulDescSetAttribute(d.matmul, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &a_scale_inv, sizeof a_scale_inv),
           "B_SCALE_POINTER");
  check_lt(cublasLtMatrixLayoutCreate(&d.a, data_type(b_format), k, n, static_cast<int64_t>(k)), "layout A");
  check_lt(cublasLtMatrixLayoutCreate(&d.b, data_type(a_format), k, m, static_cast<int64_t>(k)), "layout B");
  check_lt(cublasLtMatrixLayoutCreate(&d.c, CUDA_R_32F, n, m, static_cast<int64_t>(n)), "layout C");
  check_lt(cublasLtMatmulPreferenceCreate(&d.preference), "preference");
  check_lt(cublasLtMatmulPreferenceSetAttribute(d.preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes_,
                                                sizeof workspace_bytes_),
           "workspace preference");
  cublasLtMatmulHeuristicResult_t heuristic{};
  int found = 0;
  const auto handle = static_cast<cublasLtHandle_t>(handle_);
  check_lt(cublasLtMatmulAlgoGetHeuristic(handle, d.matmul, d.a, d.b, d.c, d.c, d.preference, 1, &heuristic, &found),
           "cublasLtMatmulAlgoGetHeuristic");
  if (found == 0) throw std::runtime_error("CublasLtGemm: cuBLASLt has no algorithm for this FP8 problem");
  const float alpha = 1.0f;
  const float beta = 0.0f;
  check_lt(cublasLtMatmul(handle, d.matmul, &alpha, b, d.a, a, d.b, &beta, c, d.c, c, d.c, &heuristic.algo, workspace_,
                          workspace_bytes_, static_cast<cudaStream_t>(stream)),
           "cublasLtMatmul");
}

}  // namespace fp8sm::kernels::cuda
