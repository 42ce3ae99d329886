// The runtime's fp32 operations on the device, each in the order and with the roundings of the
// runtime's CPU code (runtime/ops.cpp, runtime/fp8_linear.cpp, the examples' SGD), so that a
// device-resident training equals the CPU's bit for bit. Element-wise kernels are grid-stride,
// one value a thread and step.
#include "fp8_device.cuh"

#define FP8SM_FOR_EACH(i, count)                                                                          \
  for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < (count); \
       i += (unsigned long long)gridDim.x * blockDim.x)

// y = max(x, 0) as `v > 0 ? v : 0` (NaN gives 0, -0 gives 0).
extern "C" __global__ void fp8sm_relu(const float* x, unsigned long long n, float* y) {
  FP8SM_FOR_EACH(i, n) { y[i] = x[i] > 0.0f ? x[i] : 0.0f; }
}

// dx = x > 0 ? dy : 0, with x the relu's input.
extern "C" __global__ void fp8sm_relu_backward(const float* x, const float* dy, unsigned long long n, float* dx) {
  FP8SM_FOR_EACH(i, n) { dx[i] = x[i] > 0.0f ? dy[i] : 0.0f; }
}

// out = a + b (out may be a: the gradient sums add in place).
extern "C" __global__ void fp8sm_add(const float* a, const float* b, unsigned long long n, float* out) {
  FP8SM_FOR_EACH(i, n) { out[i] = __fadd_rn(a[i], b[i]); }
}

// w = w - rate * g, the product rounded first (w -= rate * g in C++ without contraction).
extern "C" __global__ void fp8sm_sgd(float* w, const float* g, float rate, unsigned long long n) {
  FP8SM_FOR_EACH(i, n) { w[i] = __fsub_rn(w[i], __fmul_rn(rate, g[i])); }
}

// c (m x n) = a (m x k) bᵀ (b: n x k), the sum over p ascending from 0.0f: the runtime's fp32
// Linear (matmul_nt in runtime/fp8_linear.cpp). One thread per output, 16 x 16 blocks.
extern "C" __global__ void fp8sm_matmul_nt_f32(const float* a, const float* b, unsigned m, unsigned n, unsigned k,
                                               float* c) {
  const unsigned j = blockIdx.x * blockDim.x + threadIdx.x;
  const unsigned i = blockIdx.y * blockDim.y + threadIdx.y;
  if (i >= m || j >= n) return;
  const float* a_row = a + (unsigned long long)i * k;
  const float* b_row = b + (unsigned long long)j * k;
  float sum = 0.0f;
  for (unsigned p = 0; p < k; ++p) sum = __fadd_rn(sum, __fmul_rn(a_row[p], b_row[p]));
  c[(unsigned long long)i * n + j] = sum;
}

// out (cols x rows) = inᵀ (in: rows x cols), one thread per value.
extern "C" __global__ void fp8sm_transpose_f32(const float* in, unsigned rows, unsigned cols, float* out) {
  const unsigned long long total = (unsigned long long)rows * cols;
  FP8SM_FOR_EACH(i, total) {
    const unsigned long long r = i / cols;
    const unsigned long long c = i % cols;
    out[c * rows + r] = in[i];
  }
}
