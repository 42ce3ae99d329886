// FP8 GEMM in the CPU reference's exact order (kernels/gemm.cpp): c[i][j] = (sum over p
// ascending of from_fp8(A[i][p]) * from_fp8(B[j][p])) * (scale_inv_a * scale_inv_b), every
// operation rounded as on the CPU. One thread per output: a reference and the fallback for
// shapes cuBLASLt's FP8 kernels do not take (dimensions not multiples of 16), not a fast GEMM.
#include "fp8_device.cuh"

template <int FormatA, int FormatB>
__device__ void fp8sm_gemm_tn_reference(const fp8sm_u8* a, const fp8sm_u8* b, unsigned m, unsigned n, unsigned k,
                                        float scale_inv_a, float scale_inv_b, float* c) {
  const unsigned j = blockIdx.x * blockDim.x + threadIdx.x;
  const unsigned i = blockIdx.y * blockDim.y + threadIdx.y;
  if (i >= m || j >= n) return;
  const fp8sm_u8* a_row = a + (unsigned long long)i * k;
  const fp8sm_u8* b_row = b + (unsigned long long)j * k;
  float acc = 0.0f;
  for (unsigned p = 0; p < k; ++p) {
    acc = __fadd_rn(acc, __fmul_rn(fp8sm_from_fp8<FormatA>(a_row[p]), fp8sm_from_fp8<FormatB>(b_row[p])));
  }
  c[(unsigned long long)i * n + j] = __fmul_rn(acc, __fmul_rn(scale_inv_a, scale_inv_b));
}

// The scale_invs are read on the device (what the casts left there).
#define FP8SM_GEMM_ENTRY(NAME, FA, FB)                                                                       \
  extern "C" __global__ void NAME(const fp8sm_u8* a, const fp8sm_u8* b, unsigned m, unsigned n, unsigned k, \
                                  const float* scale_inv_a, const float* scale_inv_b, float* c) {           \
    fp8sm_gemm_tn_reference<FA, FB>(a, b, m, n, k, *scale_inv_a, *scale_inv_b, c);                           \
  }
FP8SM_GEMM_ENTRY(fp8sm_gemm_tn_e4m3_e4m3, FP8SM_E4M3, FP8SM_E4M3)
FP8SM_GEMM_ENTRY(fp8sm_gemm_tn_e4m3_e5m2, FP8SM_E4M3, FP8SM_E5M2)
FP8SM_GEMM_ENTRY(fp8sm_gemm_tn_e5m2_e4m3, FP8SM_E5M2, FP8SM_E4M3)
FP8SM_GEMM_ENTRY(fp8sm_gemm_tn_e5m2_e5m2, FP8SM_E5M2, FP8SM_E5M2)
