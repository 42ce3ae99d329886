#include "runtime/fp8_linear.hpp"

namespace fp8sm::runtime {

namespace {

// C = A Bᵀ in fp32, k ascending (the non-FP8 path).
Matrix matmul_nt(const Matrix& a, const Matrix& b) {
  Matrix c(a.rows, b.rows);
  for (std::size_t i = 0; i < a.rows; ++i) {
    for (std::size_t j = 0; j < b.rows; ++j) {
      float sum = 0.0f;
      for (std::size_t k = 0; k < a.cols; ++k) sum += a.at(i, k) * b.at(j, k);
      c.at(i, j) = sum;
    }
  }
  return c;
}

Matrix transpose(const Matrix& a) {
  Matrix t(a.cols, a.rows);
  for (std::size_t i = 0; i < a.rows; ++i) {
    for (std::size_t j = 0; j < a.cols; ++j) t.at(j, i) = a.at(i, j);
  }
  return t;
}

void add_into(Matrix& sum, const Matrix& term) {
  for (std::size_t i = 0; i < sum.values.size(); ++i) sum.values[i] += term.values[i];
}

}  // namespace

Matrix linear_forward(Backend& backend, const Recipe& recipe, ModuleMeta& meta, const Matrix& x, const Matrix& weight,
                      bool fp8, LinearSaved& saved) {
  saved = LinearSaved(fp8);
  if (!fp8) {
    saved.input = x;
    saved.weight = weight;
    return matmul_nt(x, weight);
  }
  const kernels::Format format = recipe.forward_format();
  saved.input_fp8 = backend.cast_transpose(x, meta.forward.scale[0], format, meta.forward.amax(0, 0));
  saved.weight_fp8 = backend.cast_transpose(weight, meta.forward.scale[1], format, meta.forward.amax(0, 1));
  const Fp8Matrix& a = saved.input_fp8;
  const Fp8Matrix& b = saved.weight_fp8;
  return backend.gemm_tn(a.codes.data(), a.rows, a.format, a.scale_inv, b.codes.data(), b.rows, b.format, b.scale_inv,
                         a.cols);
}

Matrix linear_backward(Backend& backend, const Recipe& recipe, ModuleMeta& meta, const LinearSaved& saved,
                       const Matrix& grad_output, Matrix& weight_grad) {
  if (!saved.fp8) {
    // dx = dy W, dW += dyᵀ x
    const Matrix dx = matmul_nt(grad_output, transpose(saved.weight));
    add_into(weight_grad, matmul_nt(transpose(grad_output), transpose(saved.input)));
    return dx;
  }
  const kernels::Format format = recipe.backward_format();
  const Fp8Matrix dy = backend.cast_transpose(grad_output, meta.backward.scale[0], format, meta.backward.amax(0, 0));
  const Fp8Matrix& x = saved.input_fp8;
  const Fp8Matrix& w = saved.weight_fp8;
  // dx (m x in) = dy (m x out) · W (out x in): A = dy codes (K = out), B = Wᵀ codes (in x out).
  const Matrix dx =
      backend.gemm_tn(dy.codes.data(), dy.rows, dy.format, dy.scale_inv, w.transposed.data(), w.cols, w.format,
                      w.scale_inv, dy.cols);
  // dW (out x in) = dyᵀ (out x m) · x (m x in): A = dyᵀ codes (K = m), B = xᵀ codes (in x m).
  add_into(weight_grad, backend.gemm_tn(dy.transposed.data(), dy.cols, dy.format, dy.scale_inv, x.transposed.data(),
                                        x.cols, x.format, x.scale_inv, dy.rows));
  return dx;
}

}  // namespace fp8sm::runtime
