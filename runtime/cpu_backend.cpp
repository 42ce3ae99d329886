// The CPU reference backend: each operation is the kernels/ reference of the same name.
#include "kernels/cast.hpp"
#include "kernels/gemm.hpp"
#include "runtime/backend.hpp"

namespace fp8sm::runtime {

namespace {

class CpuBackend final : public Backend {
 public:
  std::string name() const override { return "cpu"; }

  Fp8Matrix cast_transpose(const Matrix& x, float scale, kernels::Format format, float& amax) override {
    Fp8Matrix out = Fp8Matrix::shaped_like(x, format);
    out.scale_inv = kernels::cast_transpose_to_fp8(x.values.data(), x.rows, x.cols, scale, format, out.codes.data(),
                                                   out.transposed.data(), amax);
    return out;
  }

  Matrix gemm_tn(const std::uint8_t* a, std::size_t a_rows, kernels::Format a_format, float a_scale_inv,
                 const std::uint8_t* b, std::size_t b_rows, kernels::Format b_format, float b_scale_inv,
                 std::size_t k) override {
    Matrix c(a_rows, b_rows);
    kernels::gemm_tn({a, a_rows, a_format, a_scale_inv}, {b, b_rows, b_format, b_scale_inv}, k, c.values.data());
    return c;
  }

  void reduce_and_update(const std::vector<kernels::ScalingMeta*>& metas, AmaxReductionGroup* group, bool reduce_amax,
                         const kernels::ScaleUpdateRecipe& recipe) override {
    runtime::reduce_and_update(metas, group, reduce_amax, recipe);
  }
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend() { return std::make_unique<CpuBackend>(); }

}  // namespace fp8sm::runtime
