// The CUDA backend: the same operations as the CPU backend, computed by the NVRTC kernels and
// cuBLASLt on the GPU of this process. Tensors stay host-resident in this runtime (its Matrix
// is a host vector), so each operation copies its operands in and its results out: correct
// and simple, not a fast training loop; bench/ measures the kernels themselves.
//
// GEMM: cuBLASLt where it takes the problem (dimensions multiples of 16, not E5M2 x E5M2) and
// Gemm::Fast is asked for; otherwise the bit-exact reference kernel, so that the runtime's
// results equal the CPU backend's bit for bit.
#include "runtime/cuda_backend.hpp"

#include <cuda_runtime_api.h>

#include <memory>
#include <stdexcept>

#include "kernels/cuda/cublaslt_gemm.hpp"
#include "kernels/cuda/cuda_device.hpp"
#include "kernels/cuda/cuda_kernels.hpp"
#include "kernels/scale_update.hpp"

namespace fp8sm::runtime {

namespace {

using kernels::cuda::check_cuda;

// A device allocation for one operation.
class Device {
 public:
  explicit Device(std::size_t bytes) { check_cuda(cudaMalloc(&data_, bytes == 0 ? 1 : bytes), "cudaMalloc"); }
  ~Device() { cudaFree(data_); }
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;
  template <class T>
  T* as() const { return static_cast<T*>(data_); }
  void upload(const void* host, std::size_t bytes) {
    check_cuda(cudaMemcpy(data_, host, bytes, cudaMemcpyHostToDevice), "cudaMemcpy to the device");
  }
  void download(void* host, std::size_t bytes) const {
    check_cuda(cudaMemcpy(host, data_, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy from the device");
  }

 private:
  void* data_ = nullptr;
};

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
    Device d_x(n * sizeof(float)), d_out(n), d_out_t(n), d_amax(sizeof(float));
    d_x.upload(x.values.data(), n * sizeof(float));
    d_amax.upload(&amax, sizeof amax);
    kernels_.cast_transpose(d_x.as<float>(), false, x.rows, x.cols, scale, format, d_out.as<std::uint8_t>(),
                            d_out_t.as<std::uint8_t>(), d_amax.as<float>());
    d_out.download(out.codes.data(), n);
    d_out_t.download(out.transposed.data(), n);
    d_amax.download(&amax, sizeof amax);
    out.scale_inv = 1.0f / scale;  // kernels::scale_inverse
    return out;
  }

  Matrix gemm_tn(const std::uint8_t* a, std::size_t a_rows, kernels::Format a_format, float a_scale_inv,
                 const std::uint8_t* b, std::size_t b_rows, kernels::Format b_format, float b_scale_inv,
                 std::size_t k) override {
    Matrix c(a_rows, b_rows);
    Device d_a(a_rows * k), d_b(b_rows * k), d_c(c.values.size() * sizeof(float));
    d_a.upload(a, a_rows * k);
    d_b.upload(b, b_rows * k);
    if (lt_ && kernels::cuda::CublasLtGemm::supports(a_rows, b_rows, k, a_format, b_format)) {
      Device d_sa(sizeof(float)), d_sb(sizeof(float));
      d_sa.upload(&a_scale_inv, sizeof(float));
      d_sb.upload(&b_scale_inv, sizeof(float));
      lt_->gemm_tn(d_a.as<std::uint8_t>(), a_format, d_sa.as<float>(), d_b.as<std::uint8_t>(), b_format,
                   d_sb.as<float>(), a_rows, b_rows, k, d_c.as<float>());
    } else {
      kernels_.gemm_tn_reference(d_a.as<std::uint8_t>(), a_format, a_scale_inv, d_b.as<std::uint8_t>(), b_format,
                                 b_scale_inv, a_rows, b_rows, k, d_c.as<float>());
    }
    d_c.download(c.values.data(), c.values.size() * sizeof(float));
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
    std::vector<std::unique_ptr<Device>> histories, scales;
    std::vector<float*> history_pointers, scale_pointers;
    std::vector<unsigned> slot_begin = {0};
    for (kernels::ScalingMeta* m : metas) {
      histories.push_back(std::make_unique<Device>(m->amax_history.size() * sizeof(float)));
      histories.back()->upload(m->amax_history.data(), m->amax_history.size() * sizeof(float));
      scales.push_back(std::make_unique<Device>(m->scale.size() * sizeof(float)));
      scales.back()->upload(m->scale.data(), m->scale.size() * sizeof(float));
      history_pointers.push_back(histories.back()->as<float>());
      scale_pointers.push_back(scales.back()->as<float>());
      slot_begin.push_back(slot_begin.back() + static_cast<unsigned>(m->slots()));
    }
    Device d_histories(history_pointers.size() * sizeof(float*)), d_scales(scale_pointers.size() * sizeof(float*));
    Device d_reduced(amaxes.size() * sizeof(float)), d_begin(slot_begin.size() * sizeof(unsigned));
    d_histories.upload(history_pointers.data(), history_pointers.size() * sizeof(float*));
    d_scales.upload(scale_pointers.data(), scale_pointers.size() * sizeof(float*));
    d_reduced.upload(amaxes.data(), amaxes.size() * sizeof(float));
    d_begin.upload(slot_begin.data(), slot_begin.size() * sizeof(unsigned));
    kernels_.scale_update(d_histories.as<float*>(), d_scales.as<float*>(), d_reduced.as<float>(),
                          d_begin.as<unsigned>(), static_cast<unsigned>(metas.size()), slot_begin.back(),
                          static_cast<unsigned>(metas.front()->history_length), recipe);
    for (std::size_t t = 0; t < metas.size(); ++t) {
      histories[t]->download(metas[t]->amax_history.data(), metas[t]->amax_history.size() * sizeof(float));
      scales[t]->download(metas[t]->scale.data(), metas[t]->scale.size() * sizeof(float));
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
