// The CPU reference of the layers a transformer block adds to the FP8 Linear: GELU, LayerNorm,
// causal single-head attention, softmax cross-entropy, forward and backward. They compute in
// the precision they are instantiated with (float for the runtime, double for the tests that
// check the backward against finite differences) and in a fixed order, so the same inputs give
// the same bits. Matrices are row-major. The CPU backend computes them here; the CUDA kernels of
// kernels/cuda/layers.cu compute the float versions in the same order, with the same exp, log
// and erf (portable_math.hpp; the double versions take the C library's).
#pragma once

#include <cstddef>
#include <vector>

namespace fp8sm::kernels {

// GELU, exact: x·Φ(x) = x/2·(1 + erf(x/√2)). dx = dy·(Φ(x) + x·φ(x)).
template <class T>
void gelu_forward(const T* x, T* y, std::size_t n);
template <class T>
void gelu_backward(const T* x, const T* dy, T* dx, std::size_t n);

// LayerNorm over each row of `cols` values: y = (x - mean)·rstd·gamma + beta, rstd =
// 1/sqrt(var + eps) with the biased variance. Forward keeps each row's mean and rstd for the
// backward, which writes dx and adds to dgamma and dbeta.
template <class T>
void layer_norm_forward(const T* x, std::size_t rows, std::size_t cols, const T* gamma, const T* beta, T eps, T* y,
                        T* mean, T* rstd);
template <class T>
void layer_norm_backward(const T* x, const T* dy, std::size_t rows, std::size_t cols, const T* gamma, const T* mean,
                         const T* rstd, T* dx, T* dgamma, T* dbeta);

// Causal single-head self-attention over `sequences` sequences of `length` positions: row r =
// s·length + i holds position i of sequence s as [q | k | v], `width` values each. out_i =
// Σ_{j≤i} p_ij v_j, p_i = softmax_j(q_i·k_j / sqrt(width)) over j ≤ i. Forward keeps p
// (sequences·length·length, zero above the diagonal) for the backward, which writes dqkv.
template <class T>
void causal_attention_forward(const T* qkv, std::size_t sequences, std::size_t length, std::size_t width, T* out,
                              T* probabilities);
template <class T>
void causal_attention_backward(const T* qkv, const T* probabilities, const T* dout, std::size_t sequences,
                               std::size_t length, std::size_t width, T* dqkv);

// Softmax cross-entropy of `rows` rows of `cols` logits against one target class a row: the mean
// over the counted rows of -log softmax(row)[target]. A row whose target is negative is not
// counted (torch's ignore_index): its gradient is zero. Forward keeps the softmax; the backward
// of the mean with gradient `dloss` writes dlogits = dloss·(p - onehot)/counted rows. With no
// row counted the loss is 0.
template <class T>
T softmax_cross_entropy_forward(const T* logits, std::size_t rows, std::size_t cols, const int* targets,
                                T* probabilities);
template <class T>
void softmax_cross_entropy_backward(const T* probabilities, std::size_t rows, std::size_t cols, const int* targets,
                                    T dloss, T* dlogits);

}  // namespace fp8sm::kernels
