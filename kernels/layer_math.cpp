#include "kernels/layer_math.hpp"

#include <algorithm>
#include <cmath>

#include "kernels/portable_math.hpp"

namespace fp8sm::kernels {

namespace {

// exp, log and erf: in float the portable ones the CUDA kernels use too (portable_math.hpp), so
// that a device computes these layers to the same bits; in double (the finite-difference tests)
// the C library's.
inline float exp_of(float x) { return portable_exp(x); }
inline float log_of(float x) { return portable_log(x); }
inline float erf_of(float x) { return portable_erf(x); }
inline double exp_of(double x) { return std::exp(x); }
inline double log_of(double x) { return std::log(x); }
inline double erf_of(double x) { return std::erf(x); }

template <class T>
constexpr T kInvSqrt2 = T(0.70710678118654752440);
template <class T>
constexpr T kInvSqrt2Pi = T(0.39894228040143267794);
}  // namespace

template <class T>
void gelu_forward(const T* x, T* y, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) y[i] = T(0.5) * x[i] * (T(1) + erf_of(x[i] * kInvSqrt2<T>));
}

template <class T>
void gelu_backward(const T* x, const T* dy, T* dx, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    const T cdf = T(0.5) * (T(1) + erf_of(x[i] * kInvSqrt2<T>));
    const T pdf = kInvSqrt2Pi<T> * exp_of(T(-0.5) * x[i] * x[i]);
    dx[i] = dy[i] * (cdf + x[i] * pdf);
  }
}

template <class T>
void layer_norm_forward(const T* x, std::size_t rows, std::size_t cols, const T* gamma, const T* beta, T eps, T* y,
                        T* mean, T* rstd) {
  for (std::size_t r = 0; r < rows; ++r) {
    const T* row = x + r * cols;
    T sum = 0;
    for (std::size_t c = 0; c < cols; ++c) sum += row[c];
    const T mu = sum / T(cols);
    T squares = 0;
    for (std::size_t c = 0; c < cols; ++c) squares += (row[c] - mu) * (row[c] - mu);
    const T inv = T(1) / std::sqrt(squares / T(cols) + eps);
    mean[r] = mu;
    rstd[r] = inv;
    for (std::size_t c = 0; c < cols; ++c) y[r * cols + c] = (row[c] - mu) * inv * gamma[c] + beta[c];
  }
}

template <class T>
void layer_norm_backward(const T* x, const T* dy, std::size_t rows, std::size_t cols, const T* gamma, const T* mean,
                         const T* rstd, T* dx, T* dgamma, T* dbeta) {
  for (std::size_t r = 0; r < rows; ++r) {
    const T* row = x + r * cols;
    const T* grad = dy + r * cols;
    T sum_dxhat = 0;
    T sum_dxhat_xhat = 0;
    for (std::size_t c = 0; c < cols; ++c) {
      const T xhat = (row[c] - mean[r]) * rstd[r];
      const T dxhat = grad[c] * gamma[c];
      sum_dxhat += dxhat;
      sum_dxhat_xhat += dxhat * xhat;
      dgamma[c] += grad[c] * xhat;
      dbeta[c] += grad[c];
    }
    const T mean_dxhat = sum_dxhat / T(cols);
    const T mean_dxhat_xhat = sum_dxhat_xhat / T(cols);
    for (std::size_t c = 0; c < cols; ++c) {
      const T xhat = (row[c] - mean[r]) * rstd[r];
      dx[r * cols + c] = rstd[r] * (grad[c] * gamma[c] - mean_dxhat - xhat * mean_dxhat_xhat);
    }
  }
}

template <class T>
void causal_attention_forward(const T* qkv, std::size_t sequences, std::size_t length, std::size_t width, T* out,
                              T* probabilities) {
  const T scale = T(1) / std::sqrt(T(width));
  const std::size_t stride = 3 * width;
  for (std::size_t s = 0; s < sequences; ++s) {
    const T* base = qkv + s * length * stride;
    T* p_base = probabilities + s * length * length;
    for (std::size_t i = 0; i < length; ++i) {
      const T* q = base + i * stride;
      T* p = p_base + i * length;
      T largest = 0;
      for (std::size_t j = 0; j <= i; ++j) {
        const T* k = base + j * stride + width;
        T dot = 0;
        for (std::size_t c = 0; c < width; ++c) dot += q[c] * k[c];
        p[j] = dot * scale;
        largest = j == 0 ? p[j] : std::max(largest, p[j]);
      }
      T total = 0;
      for (std::size_t j = 0; j <= i; ++j) {
        p[j] = exp_of(p[j] - largest);
        total += p[j];
      }
      for (std::size_t j = 0; j <= i; ++j) p[j] /= total;
      for (std::size_t j = i + 1; j < length; ++j) p[j] = 0;
      T* o = out + (s * length + i) * width;
      for (std::size_t c = 0; c < width; ++c) o[c] = 0;
      for (std::size_t j = 0; j <= i; ++j) {
        const T* v = base + j * stride + 2 * width;
        for (std::size_t c = 0; c < width; ++c) o[c] += p[j] * v[c];
      }
    }
  }
}

template <class T>
void causal_attention_backward(const T* qkv, const T* probabilities, const T* dout, std::size_t sequences,
                               std::size_t length, std::size_t width, T* dqkv) {
  const T scale = T(1) / std::sqrt(T(width));
  const std::size_t stride = 3 * width;
  std::vector<T> dp(length);
  for (std::size_t s = 0; s < sequences; ++s) {
    const T* base = qkv + s * length * stride;
    T* dbase = dqkv + s * length * stride;
    for (std::size_t e = 0; e < length * stride; ++e) dbase[e] = 0;
    for (std::size_t i = 0; i < length; ++i) {
      const T* p = probabilities + (s * length + i) * length;
      const T* g = dout + (s * length + i) * width;
      // dv_j += p_ij g_i; dp_ij = g_i · v_j
      T weighted = 0;
      for (std::size_t j = 0; j <= i; ++j) {
        const T* v = base + j * stride + 2 * width;
        T* dv = dbase + j * stride + 2 * width;
        T dot = 0;
        for (std::size_t c = 0; c < width; ++c) {
          dv[c] += p[j] * g[c];
          dot += g[c] * v[c];
        }
        dp[j] = dot;
        weighted += p[j] * dot;
      }
      // ds_ij = p_ij (dp_ij - Σ_k p_ik dp_ik); dq_i += scale ds_ij k_j; dk_j += scale ds_ij q_i
      const T* q = base + i * stride;
      T* dq = dbase + i * stride;
      for (std::size_t j = 0; j <= i; ++j) {
        const T ds = p[j] * (dp[j] - weighted) * scale;
        const T* k = base + j * stride + width;
        T* dk = dbase + j * stride + width;
        for (std::size_t c = 0; c < width; ++c) {
          dq[c] += ds * k[c];
          dk[c] += ds * q[c];
        }
      }
    }
  }
}

namespace {
std::size_t counted_rows(std::size_t rows, const int* targets) {
  std::size_t counted = 0;
  for (std::size_t r = 0; r < rows; ++r) counted += targets[r] >= 0 ? 1 : 0;
  return counted;
}
}  // namespace

template <class T>
T softmax_cross_entropy_forward(const T* logits, std::size_t rows, std::size_t cols, const int* targets,
                                T* probabilities) {
  T loss = 0;
  const std::size_t counted = counted_rows(rows, targets);
  for (std::size_t r = 0; r < rows; ++r) {
    const T* row = logits + r * cols;
    T* p = probabilities + r * cols;
    T largest = row[0];
    for (std::size_t c = 1; c < cols; ++c) largest = std::max(largest, row[c]);
    T total = 0;
    for (std::size_t c = 0; c < cols; ++c) {
      p[c] = exp_of(row[c] - largest);
      total += p[c];
    }
    for (std::size_t c = 0; c < cols; ++c) p[c] /= total;
    if (targets[r] >= 0) loss += -(row[targets[r]] - largest - log_of(total));
  }
  return counted == 0 ? T(0) : loss / T(counted);
}

template <class T>
void softmax_cross_entropy_backward(const T* probabilities, std::size_t rows, std::size_t cols, const int* targets,
                                    T dloss, T* dlogits) {
  const std::size_t counted = counted_rows(rows, targets);
  const T per_row = counted == 0 ? T(0) : dloss / T(counted);
  for (std::size_t r = 0; r < rows; ++r) {
    if (targets[r] < 0) {
      for (std::size_t c = 0; c < cols; ++c) dlogits[r * cols + c] = 0;
      continue;
    }
    for (std::size_t c = 0; c < cols; ++c) {
      const T onehot = static_cast<int>(c) == targets[r] ? T(1) : T(0);
      dlogits[r * cols + c] = per_row * (probabilities[r * cols + c] - onehot);
    }
  }
}

#define FP8SM_LAYER_MATH(T)                                                                                          \
  template void gelu_forward<T>(const T*, T*, std::size_t);                                                         \
  template void gelu_backward<T>(const T*, const T*, T*, std::size_t);                                              \
  template void layer_norm_forward<T>(const T*, std::size_t, std::size_t, const T*, const T*, T, T*, T*, T*);       \
  template void layer_norm_backward<T>(const T*, const T*, std::size_t, std::size_t, const T*, const T*, const T*, \
                                       T*, T*, T*);                                                                 \
  template void causal_attention_forward<T>(const T*, std::size_t, std::size_t, std::size_t, T*, T*);               \
  template void causal_attention_backward<T>(const T*, const T*, const T*, std::size_t, std::size_t, std::size_t,  \
                                             T*);                                                                   \
  template T softmax_cross_entropy_forward<T>(const T*, std::size_t, std::size_t, const int*, T*);                  \
  template void softmax_cross_entropy_backward<T>(const T*, std::size_t, std::size_t, const int*, T, T*);
FP8SM_LAYER_MATH(float)
FP8SM_LAYER_MATH(double)
#undef FP8SM_LAYER_MATH

}  // namespace fp8sm::kernels
