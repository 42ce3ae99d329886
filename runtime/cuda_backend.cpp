// The CUDA backend: the same operations as the CPU backend, computed by the NVRTC kernels and
// cuBLASLt on the GPU of this process. Tensors stay host-resident in this runtime (its Matrix
// is a host vector), so each operation copies its operands in and its results out: correct
// and simple, not a fast training loop; bench/ measures the kernels themselves.
//
// GEMM: cuBLASLt where it takes the problem (dimensions multiples of 16, not E5M2 x E5M2) and
// Gemm::Fast is asked for; otherwise the bit-exact reference kernel, so that the runtime's
// results equal the CPU backend's bit for bit.
#include "runtime/cuda_backend.hpp"

#include <memory>
#include <stdexcept>

#include "kernels/cuda/cublaslt_gemm.hpp"
#include "kernels/cuda/cuda_kernels.hpp"
#include "kernels/cuda/device_buffer.hpp"
#include "kernels/cast.hpp"
#include "kernels/scale_update.hpp"

namespace fp8sm::runtime {

namespace {

using kernels::cuda::DeviceBuffer;

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(CudaGemm gemm) : gemm_choice_(gemm), kernels_(compiler_) {
    if (gemm_choice_ == CudaGemm::Fast) lt_ = std::make_unique<kernels::cuda::CublasLtGemm>();
  }

  std::string name() const override { return gemm_choice_ == CudaGemm::Fast ? "cuda" : "cuda-exact"; }

  Fp8Matrix cast_transpose(const Matrix& x, float scale, kernels::Format format, float& amax) override {
    Fp8Matrix out;
    out.rows = x.rows;
    out.cols = x.cols;
    out.format = format;
    out.codes.resize(x.values.size());
    out.transposed.resize(x.values.size());
    const std::size_t n = x.values.size();
    DeviceBuffer<float> d_x(x.values), d_amax(std::vector<float>{amax});
    DeviceBuffer<std::uint8_t> d_out(n), d_out_t(n);
    kernels_.cast_transpose(d_x.get(), false, x.rows, x.cols, scale, format, d_out.get(), d_out_t.get(), d_amax.get());
    d_out.download(out.codes.data(), n);
    d_out_t.download(out.transposed.data(), n);
    d_amax.download(&amax, 1);
    out.scale_inv = kernels::scale_inverse(scale);
    return out;
  }

  Matrix gemm_tn(const std::uint8_t* a, std::size_t a_rows, kernels::Format a_format, float a_scale_inv,
                 const std::uint8_t* b, std::size_t b_rows, kernels::Format b_format, float b_scale_inv,
                 std::size_t k) override {
    Matrix c(a_rows, b_rows);
    DeviceBuffer<std::uint8_t> d_a(a_rows * k), d_b(b_rows * k);
    DeviceBuffer<float> d_c(c.values.size());
    d_a.upload(a, a_rows * k);
    d_b.upload(b, b_rows * k);
    if (lt_ && kernels::cuda::CublasLtGemm::supports(a_rows, b_rows, k, a_format, b_format)) {
      DeviceBuffer<float> d_sa(std::vector<float>{a_scale_inv}), d_sb(std::vector<float>{b_scale_inv});
      lt_->gemm_tn(d_a.get(), a_format, d_sa.get(), d_b.get(), b_format, d_sb.get(), a_rows, b_rows, k, d_c.get());
    } else {
      kernels_.gemm_tn_reference(d_a.get(), a_format, a_scale_inv, d_b.get(), b_format, b_scale_inv, a_rows, b_rows, k,
                                 d_c.get());
    }
    d_c.download(c.values.data(), c.values.size());
    return c;
  }

  void reduce_and_update(const std::vector<kernels::ScalingMeta*>& metas, AmaxReductionGroup* group,
                         bool reduce_amax, const kernels::ScaleUpdateRecipe& recipe) override {
    // Steps 1 and 2 on the host (the metas live there; the reduction is the group's), the
    // update of every tensor in one launch.
    const std::vector<float> amaxes = reduced_amaxes(metas, group, reduce_amax);
    if (metas.empty()) return;
    for (const kernels::ScalingMeta* m : metas) {
      if (m->history_length != metas.front()->history_length) {
        throw std::invalid_argument("CUDA update: the metas of one key must share one amax history length");
      }
    }
    std::vector<std::unique_ptr<DeviceBuffer<float>>> histories, scales;
    std::vector<float*> history_pointers, scale_pointers;
    std::vector<unsigned> slot_begin = {0};
    for (kernels::ScalingMeta* m : metas) {
      histories.push_back(std::make_unique<DeviceBuffer<float>>(m->amax_history));
      scales.push_back(std::make_unique<DeviceBuffer<float>>(m->scale));
      history_pointers.push_back(histories.back()->get());
      scale_pointers.push_back(scales.back()->get());
      slot_begin.push_back(slot_begin.back() + static_cast<unsigned>(m->slots()));
    }
    DeviceBuffer<float*> d_histories(history_pointers), d_scales(scale_pointers);
    DeviceBuffer<float> d_reduced(amaxes);
    DeviceBuffer<unsigned> d_begin(slot_begin);
    kernels_.scale_update(d_histories.get(), d_scales.get(), d_reduced.get(), d_begin.get(),
                          static_cast<unsigned>(metas.size()), slot_begin.back(),
                          static_cast<unsigned>(metas.front()->history_length), recipe);
    for (std::size_t t = 0; t < metas.size(); ++t) {
      histories[t]->download(metas[t]->amax_history.data(), metas[t]->amax_history.size());
      scales[t]->download(metas[t]->scale.data(), metas[t]->scale.size());
    }
  }

 private:
  CudaGemm gemm_choice_;
  kernels::cuda::NvrtcCompiler compiler_;
  kernels::cuda::CudaKernels kernels_;
  std::unique_ptr<kernels::cuda::CublasLtGemm> lt_;
};

}  // namespace

std::unique_ptr<Backend> make_cuda_backend(CudaGemm gemm) { return std::make_unique<CudaBackend>(gemm); }

std::string cuda_unavailable_reason() {
  const auto& status = kernels::cuda::device_status();
  return status.usable ? "" : status.why;
}

}  // namespace fp8sm::runtime
