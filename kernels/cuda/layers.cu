// The layers around the FP8 Linears on the device (kernels/layer_math.cpp, float): GELU,
// LayerNorm, causal attention, softmax cross-entropy, embedding, and Adam, each summing in the
// reference's order and with the reference's exp, log and erf (portable_math.cuh: basic float
// operations only), so that they equal it bit for bit, on a GPU as under the host emulation
// (sqrtf and the divisions are correctly rounded on both). The parallel parts are the
// independent ones: a thread per value, per row, per column or per sequence, whichever keeps
// each sum in one thread in the reference's order.
#include "fp8_device.cuh"

#define FP8SM_MATH_FN __device__ __forceinline__
#define fp8sm_float_bits __float_as_uint
#define fp8sm_bits_float __uint_as_float
#include "portable_math.cuh"
#undef fp8sm_float_bits
#undef fp8sm_bits_float
#undef FP8SM_MATH_FN

#define FP8SM_INV_SQRT2 0.70710678118654752440f
#define FP8SM_INV_SQRT2PI 0.39894228040143267794f

__device__ __forceinline__ unsigned long long fp8sm_index() {
  return (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
}

// std::max(a, b): b only when a < b.
__device__ __forceinline__ float fp8sm_max(float a, float b) { return a < b ? b : a; }

extern "C" __global__ void fp8sm_gelu_forward(const float* x, unsigned long long n, float* y) {
  const unsigned long long i = fp8sm_index();
  if (i >= n) return;
  y[i] = 0.5f * x[i] * (1.0f + fp8sm_erff(x[i] * FP8SM_INV_SQRT2));
}

extern "C" __global__ void fp8sm_gelu_backward(const float* x, const float* dy, unsigned long long n, float* dx) {
  const unsigned long long i = fp8sm_index();
  if (i >= n) return;
  const float cdf = 0.5f * (1.0f + fp8sm_erff(x[i] * FP8SM_INV_SQRT2));
  const float pdf = FP8SM_INV_SQRT2PI * fp8sm_expf(-0.5f * x[i] * x[i]);
  dx[i] = dy[i] * (cdf + x[i] * pdf);
}

// A thread per row.
extern "C" __global__ void fp8sm_layer_norm_forward(const float* x, unsigned rows, unsigned cols, const float* gamma,
                                                   const float* beta, float eps, float* y, float* mean, float* rstd) {
  const unsigned long long r = fp8sm_index();
  if (r >= rows) return;
  const float* row = x + r * cols;
  float sum = 0.0f;
  for (unsigned c = 0; c < cols; ++c) sum += row[c];
  const float mu = sum / (float)cols;
  float squares = 0.0f;
  for (unsigned c = 0; c < cols; ++c) squares += (row[c] - mu) * (row[c] - mu);
  const float inv = 1.0f / sqrtf(squares / (float)cols + eps);
  mean[r] = mu;
  rstd[r] = inv;
  for (unsigned c = 0; c < cols; ++c) y[r * cols + c] = (row[c] - mu) * inv * gamma[c] + beta[c];
}

// dx: a thread per row.
extern "C" __global__ void fp8sm_layer_norm_backward_dx(const float* x, const float* dy, unsigned rows, unsigned cols,
                                                       const float* gamma, const float* mean, const float* rstd,
                                                       float* dx) {
  const unsigned long long r = fp8sm_index();
  if (r >= rows) return;
  const float* row = x + r * cols;
  const float* grad = dy + r * cols;
  float sum_dxhat = 0.0f;
  float sum_dxhat_xhat = 0.0f;
  for (unsigned c = 0; c < cols; ++c) {
    const float xhat = (row[c] - mean[r]) * rstd[r];
    const float dxhat = grad[c] * gamma[c];
    sum_dxhat += dxhat;
    sum_dxhat_xhat += dxhat * xhat;
  }
  const float mean_dxhat = sum_dxhat / (float)cols;
  const float mean_dxhat_xhat = sum_dxhat_xhat / (float)cols;
  for (unsigned c = 0; c < cols; ++c) {
    const float xhat = (row[c] - mean[r]) * rstd[r];
    dx[r * cols + c] = rstd[r] * (grad[c] * gamma[c] - mean_dxhat - xhat * mean_dxhat_xhat);
  }
}

// dgamma and dbeta (added to): a thread per column, the rows in order, as the reference adds them.
extern "C" __global__ void fp8sm_layer_norm_backward_params(const float* x, const float* dy, unsigned rows,
                                                           unsigned cols, const float* mean, const float* rstd,
                                                           float* dgamma, float* dbeta) {
  const unsigned long long c = fp8sm_index();
  if (c >= cols) return;
  float dg = dgamma[c];
  float db = dbeta[c];
  for (unsigned r = 0; r < rows; ++r) {
    const float xhat = (x[(unsigned long long)r * cols + c] - mean[r]) * rstd[r];
    const float grad = dy[(unsigned long long)r * cols + c];
    dg += grad * xhat;
    db += grad;
  }
  dgamma[c] = dg;
  dbeta[c] = db;
}

// A thread per query (sequence s, position i): its probabilities and its output row.
extern "C" __global__ void fp8sm_attention_forward(const float* qkv, unsigned sequences, unsigned length,
                                                  unsigned width, float* out, float* probabilities) {
  const unsigned long long index = fp8sm_index();
  if (index >= (unsigned long long)sequences * length) return;
  const unsigned long long s = index / length;
  const unsigned i = (unsigned)(index % length);
  const float scale = 1.0f / sqrtf((float)width);
  const unsigned long long stride = 3ull * width;
  const float* base = qkv + s * length * stride;
  const float* q = base + i * stride;
  float* p = probabilities + (s * length + i) * length;
  float largest = 0.0f;
  for (unsigned j = 0; j <= i; ++j) {
    const float* k = base + j * stride + width;
    float dot = 0.0f;
    for (unsigned c = 0; c < width; ++c) dot += q[c] * k[c];
    p[j] = dot * scale;
    largest = j == 0 ? p[j] : fp8sm_max(largest, p[j]);
  }
  float total = 0.0f;
  for (unsigned j = 0; j <= i; ++j) {
    p[j] = fp8sm_expf(p[j] - largest);
    total += p[j];
  }
  for (unsigned j = 0; j <= i; ++j) p[j] /= total;
  for (unsigned j = i + 1; j < length; ++j) p[j] = 0.0f;
  float* o = out + (s * length + i) * width;
  for (unsigned c = 0; c < width; ++c) o[c] = 0.0f;
  for (unsigned j = 0; j <= i; ++j) {
    const float* v = base + j * stride + 2 * width;
    for (unsigned c = 0; c < width; ++c) o[c] += p[j] * v[c];
  }
}

// A thread per sequence, the queries in order (each key's and value's gradient sums over the
// queries in the reference's order); `scratch` holds `length` floats a sequence.
extern "C" __global__ void fp8sm_attention_backward(const float* qkv, const float* probabilities, const float* dout,
                                                   unsigned sequences, unsigned length, unsigned width, float* dqkv,
                                                   float* scratch) {
  const unsigned long long s = fp8sm_index();
  if (s >= sequences) return;
  const float scale = 1.0f / sqrtf((float)width);
  const unsigned long long stride = 3ull * width;
  const float* base = qkv + s * length * stride;
  float* dbase = dqkv + s * length * stride;
  float* dp = scratch + s * length;
  for (unsigned long long e = 0; e < length * stride; ++e) dbase[e] = 0.0f;
  for (unsigned i = 0; i < length; ++i) {
    const float* p = probabilities + (s * length + i) * length;
    const float* g = dout + (s * length + i) * width;
    float weighted = 0.0f;
    for (unsigned j = 0; j <= i; ++j) {
      const float* v = base + j * stride + 2 * width;
      float* dv = dbase + j * stride + 2 * width;
      float dot = 0.0f;
      for (unsigned c = 0; c < width; ++c) {
        dv[c] += p[j] * g[c];
        dot += g[c] * v[c];
      }
      dp[j] = dot;
      weighted += p[j] * dot;
    }
    const float* q = base + i * stride;
    float* dq = dbase + i * stride;
    for (unsigned j = 0; j <= i; ++j) {
      const float ds = p[j] * (dp[j] - weighted) * scale;
      const float* k = base + j * stride + width;
      float* dk = dbase + j * stride + width;
      for (unsigned c = 0; c < width; ++c) {
        dq[c] += ds * k[c];
        dk[c] += ds * q[c];
      }
    }
  }
}

// Softmax of each row (a thread per row) and its loss term, -log softmax(row)[target] (0 for a
// row not counted); fp8sm_cross_entropy_sum then adds the terms in row order.
extern "C" __global__ void fp8sm_cross_entropy_rows(const float* logits, unsigned rows, unsigned cols,
                                                   const int* targets, float* probabilities, float* terms) {
  const unsigned long long r = fp8sm_index();
  if (r >= rows) return;
  const float* row = logits + r * cols;
  float* p = probabilities + r * cols;
  float largest = row[0];
  for (unsigned c = 1; c < cols; ++c) largest = fp8sm_max(largest, row[c]);
  float total = 0.0f;
  for (unsigned c = 0; c < cols; ++c) {
    p[c] = fp8sm_expf(row[c] - largest);
    total += p[c];
  }
  for (unsigned c = 0; c < cols; ++c) p[c] /= total;
  terms[r] = targets[r] >= 0 ? -(row[targets[r]] - largest - fp8sm_logf(total)) : 0.0f;
}

// One thread: the mean over the counted rows, summed in row order.
extern "C" __global__ void fp8sm_cross_entropy_sum(const float* terms, const int* targets, unsigned rows,
                                                  unsigned counted, float* loss) {
  if (fp8sm_index() != 0) return;
  float sum = 0.0f;
  for (unsigned r = 0; r < rows; ++r) {
    if (targets[r] >= 0) sum += terms[r];
  }
  *loss = counted == 0 ? 0.0f : sum / (float)counted;
}

// dlogits = dloss / counted · (p - onehot), 0 on rows not counted; a thread per value. `dloss`
// is the loss's gradient, on the device.
extern "C" __global__ void fp8sm_cross_entropy_backward(const float* probabilities, unsigned rows, unsigned cols,
                                                       const int* targets, unsigned counted, const float* dloss,
                                                       float* dlogits) {
  const unsigned long long index = fp8sm_index();
  if (index >= (unsigned long long)rows * cols) return;
  const unsigned long long r = index / cols;
  const int c = (int)(index % cols);
  if (targets[r] < 0) {
    dlogits[index] = 0.0f;
    return;
  }
  const float per_row = counted == 0 ? 0.0f : *dloss / (float)counted;
  const float onehot = c == targets[r] ? 1.0f : 0.0f;
  dlogits[index] = per_row * (probabilities[index] - onehot);
}

// Row tokens[r] of the table for each r; a thread per value.
extern "C" __global__ void fp8sm_embedding_forward(const float* table, const int* tokens, unsigned rows,
                                                  unsigned width, float* out) {
  const unsigned long long index = fp8sm_index();
  if (index >= (unsigned long long)rows * width) return;
  const unsigned long long r = index / width;
  out[index] = table[(unsigned long long)tokens[r] * width + index % width];
}

// table_grad[tokens[r]] += dy[r], the rows in order: a thread per column.
extern "C" __global__ void fp8sm_embedding_backward(const float* dy, const int* tokens, unsigned rows, unsigned width,
                                                   float* table_grad) {
  const unsigned long long c = fp8sm_index();
  if (c >= width) return;
  for (unsigned r = 0; r < rows; ++r) {
    table_grad[(unsigned long long)tokens[r] * width + c] += dy[(unsigned long long)r * width + c];
  }
}

// One Adam step of one parameter, as the example's CPU loop: m and v updated, then
// w -= rate · (m / correction1) / (sqrt(v / correction2) + epsilon). one_minus_beta1/2 are the
// host's float constants (1 - beta) as the CPU rounds them.
extern "C" __global__ void fp8sm_adam(float* w, const float* g, float* m, float* v, unsigned long long n, float beta1,
                                     float one_minus_beta1, float beta2, float one_minus_beta2, float rate,
                                     float correction1, float correction2, float epsilon) {
  const unsigned long long i = fp8sm_index();
  if (i >= n) return;
  const float grad = g[i];
  m[i] = beta1 * m[i] + one_minus_beta1 * grad;
  v[i] = beta2 * v[i] + one_minus_beta2 * grad * grad;
  w[i] -= rate * (m[i] / correction1) / (sqrtf(v[i] / correction2) + epsilon);
}
