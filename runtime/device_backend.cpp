// The same operations as the CPU backend, computed by the kernels of kernels/cuda/ on a Device.
// Tensors stay host-resident in this runtime (its Matrix is a host vector), so each operation
// copies its operands in and its results out: correct and simple, not a fast training loop;
// bench/ measures the kernels themselves.
//
// GEMM: the device's fast GEMM (cuBLASLt on a GPU backend "cuda") where it takes the problem;
// otherwise the bit-exact reference kernel, so that results equal the CPU backend's bit for bit.
#include "runtime/device_backend.hpp"

#include <stdexcept>
#include <utility>

#include "kernels/cast.hpp"
#include "kernels/cuda/device_buffer.hpp"
#include "kernels/cuda/host_emulation/emulated_device.hpp"
#include "kernels/scale_update.hpp"

namespace fp8sm::runtime {

namespace {

using kernels::cuda::DeviceBuffer;

class DeviceBackend final : public Backend {
 public:
  DeviceBackend(std::unique_ptr<kernels::cuda::Device> device, std::string name)
      : device_(std::move(device)), name_(std::move(name)) {}

  std::string name() const override { return name_; }

  Fp8Matrix cast_transpose(const Matrix& x, float scale, kernels::Format format, float& amax) override {
    Fp8Matrix out = Fp8Matrix::shaped_like(x, format);
    const std::size_t n = x.values.size();
    kernels::cuda::Device& d = *device_;
    DeviceBuffer<float> d_x(d, x.values), d_amax(d, std::vector<float>{amax});
    DeviceBuffer<std::uint8_t> d_out(d, n), d_out_t(d, n);
    d.cast_transpose(d_x.get(), false, x.rows, x.cols, scale, format, d_out.get(), d_out_t.get(), d_amax.get());
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
    kernels::cuda::Device& d = *device_;
    DeviceBuffer<std::uint8_t> d_a(d, a_rows * k), d_b(d, b_rows * k);
    DeviceBuffer<float> d_c(d, c.values.size());
    d_a.upload(a, a_rows * k);
    d_b.upload(b, b_rows * k);
    if (d.takes_fast_gemm(a_rows, b_rows, k, a_format, b_format)) {
      DeviceBuffer<float> d_sa(d, std::vector<float>{a_scale_inv}), d_sb(d, std::vector<float>{b_scale_inv});
      d.gemm_tn_fast(d_a.get(), a_format, d_sa.get(), d_b.get(), b_format, d_sb.get(), a_rows, b_rows, k, d_c.get());
    } else {
      d.gemm_tn_reference(d_a.get(), a_format, a_scale_inv, d_b.get(), b_format, b_scale_inv, a_rows, b_rows, k,
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
    device_->update_scales(metas, amaxes, recipe);
  }

 private:
  std::unique_ptr<kernels::cuda::Device> device_;
  std::string name_;
};

}  // namespace

std::unique_ptr<Backend> make_device_backend(std::unique_ptr<kernels::cuda::Device> device, std::string name) {
  if (!device) throw std::invalid_argument("make_device_backend: no device");
  return std::make_unique<DeviceBackend>(std::move(device), std::move(name));
}

std::unique_ptr<Backend> make_emulated_cuda_backend() {
  return make_device_backend(std::make_unique<kernels::cuda::EmulatedDevice>(), "cuda-emulated");
}

}  // namespace fp8sm::runtime
