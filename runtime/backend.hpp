// Where the numbers are computed. The runtime decides what to compute (asking the state
// machine); a Backend computes it: the CPU reference (kernels/) or, later, CUDA.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/fp8.hpp"
#include "kernels/scale_update.hpp"
#include "kernels/scaling_meta.hpp"
#include "runtime/amax_reduction.hpp"
#include "runtime/matrix.hpp"

namespace fp8sm::runtime {

// An FP8 tensor as a cast leaves it: the codes, their transpose (the other GEMM operand
// layout), and the scale_inv that dequantizes both.
struct Fp8Matrix {
  std::size_t rows = 0;
  std::size_t cols = 0;
  kernels::Format format = kernels::Format::E4M3;
  float scale_inv = 1.0f;
  std::vector<std::uint8_t> codes;       // rows x cols
  std::vector<std::uint8_t> transposed;  // cols x rows

  // The shape of `x` in `format`, codes zero, scale_inv 1: what a backend's cast fills in.
  static Fp8Matrix shaped_like(const Matrix& x, kernels::Format format) {
    Fp8Matrix m;
    m.rows = x.rows;
    m.cols = x.cols;
    m.format = format;
    m.codes.resize(x.values.size());
    m.transposed.resize(x.values.size());
    return m;
  }
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  // q = fp8(x * scale) and its transpose; amax := max(amax, max|x|).
  virtual Fp8Matrix cast_transpose(const Matrix& x, float scale, kernels::Format format, float& amax) = 0;
  // C (a_rows x b_rows) = dequant(A) dequant(B)^T over a shared inner dimension `k`, where A is
  // given as a_rows x k codes and B as b_rows x k codes, fp32 accumulation.
  virtual Matrix gemm_tn(const std::uint8_t* a, std::size_t a_rows, kernels::Format a_format, float a_scale_inv,
                         const std::uint8_t* b, std::size_t b_rows, kernels::Format b_format, float b_scale_inv,
                         std::size_t k) = 0;
  // Spec §6 steps 1-4 for one registry key.
  virtual void reduce_and_update(const std::vector<kernels::ScalingMeta*>& metas, AmaxReductionGroup* group,
                                 bool reduce_amax, const kernels::ScaleUpdateRecipe& recipe) = 0;
};

// The CPU reference backend (kernels/): bit-exact to spec §6.
std::unique_ptr<Backend> make_cpu_backend();

}  // namespace fp8sm::runtime
