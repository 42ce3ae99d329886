// The CUDA kernels' speed on the GPU of this machine: for square inputs of 4096², 8192² and
// 16384² float32, the GB/s of cast + amax and of cast-transpose + amax (each with the vectorized
// kernel and with the kernel for any shape) and their fraction of a device-to-device copy of the
// same input measured in the same run; the fused update of 64, 512 and 4096 tensors of 3 slots
// (one launch each) with 16- and 1024-row histories; FP8 GEMM TFLOP/s through cuBLASLt at 4096³
// and 8192³.
// Targets on H200: cast-transpose >= 0.9 of the copy, 4096 tensors updated in < 20 µs, GEMM
// >= 1300 TFLOP/s at 8192³. Exit status 3 (and the CUDA runtime's reason) without a GPU.
//
//   bench/kernel_bandwidth [--repeats R]
#include <cuda_runtime_api.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <memory>
#include <vector>

#include "kernels/cuda/cublaslt_gemm.hpp"
#include "kernels/cuda/cuda_device.hpp"
#include "kernels/cuda/gpu_device.hpp"
#include "kernels/cuda/device_buffer.hpp"

namespace {

using fp8sm::kernels::Format;
using fp8sm::kernels::cuda::check_cuda;
using fp8sm::kernels::cuda::DeviceBuffer;

// Milliseconds per call of `work`, the median of `repeats` timed with CUDA events after a warm-up.
double time_ms(int repeats, const std::function<void()>& work) {
  work();
  check_cuda(cudaDeviceSynchronize(), "warm-up");
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  std::vector<float> times;
  for (int r = 0; r < repeats; ++r) {
    cudaEventRecord(start);
    work();
    cudaEventRecord(stop);
    cudaEventSynchronize(stop);
    float ms = 0;
    cudaEventElapsedTime(&ms, start, stop);
    times.push_back(ms);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}


}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kernel_bandwidth: the CUDA kernels' speed on this GPU"};
  int repeats = 20;
  app.add_option("--repeats", repeats, "timed calls per figure (default 20)");
  CLI11_PARSE(app, argc, argv);
  const auto& device = fp8sm::kernels::cuda::device_status();
  if (!device.usable) {
    fmt::print(stderr, "kernel_bandwidth: {}\n", device.why);
    return 3;
  }
  fmt::print("{} (sm_{})\n", device.name, device.arch);
  fp8sm::kernels::cuda::NvrtcCompiler compiler;
  fp8sm::kernels::cuda::GpuDevice gpu(compiler);

  // Each cast twice: the vectorized kernel these square shapes get, and the kernel for any shape.
  fmt::print("{:<7} {:>10} {:>22} {:>22} {:>22} {:>22}\n", "size", "copy GB/s", "cast vec GB/s (copy)",
             "cast any GB/s (copy)", "c-t vec GB/s (copy)", "c-t any GB/s (copy)");
  for (std::size_t side : {4096u, 8192u, 16384u}) {
    const std::size_t n = side * side;
    DeviceBuffer<float> in(gpu, n), copy(gpu, n), amax(gpu, 1), scale(gpu, std::vector<float>{1.0f});
    DeviceBuffer<std::uint8_t> out(gpu, n), out_t(gpu, n);
    const double copy_ms = time_ms(repeats, [&] { cudaMemcpy(copy.get(), in.get(), n * 4, cudaMemcpyDeviceToDevice); });
    const auto elements = static_cast<double>(n);
    const double copy_gbs = 2.0 * elements * 4 / (copy_ms * 1e6);  // read + write
    fmt::print("{:<7} {:10.0f}", side, copy_gbs);
    for (bool cast_transpose : {false, true}) {
      for (bool vectorized : {true, false}) {
        gpu.set_vectorized(vectorized);
        const double ms = time_ms(repeats, [&] {
          if (cast_transpose) {
            gpu.cast_transpose(in.get(), false, side, side, scale.get(), Format::E4M3, out.get(), out_t.get(), amax.get());
          } else {
            gpu.cast(in.get(), false, n, scale.get(), Format::E4M3, out.get(), amax.get());
          }
        });
        const double gbs = (cast_transpose ? 6.0 : 5.0) * elements / (ms * 1e6);  // 4 read, 1 or 2 written
        fmt::print(" {:15.0f} ({:4.2f})", gbs, gbs / copy_gbs);
      }
    }
    fmt::print("\n");
  }
  gpu.set_vectorized(true);

  // The update reads and writes every history row once: with TE's default history of 1024 rows,
  // 4096 tensors of 3 slots move 100 MB, about 21 µs at H200's 4.8 TB/s, so the 20 µs target
  // is printed for a 16-row history too.
  fmt::print("\n{:<10} {:>16} {:>16}\n", "tensors", "update us L=16", "update us L=1024");
  for (unsigned tensors : {64u, 512u, 4096u}) {
    fmt::print("{:<10}", tensors);
    for (unsigned length : {16u, 1024u}) {
      const unsigned slots = 3;
      std::vector<std::unique_ptr<DeviceBuffer<float>>> histories, scales;
      std::vector<float*> hp, sp;
      std::vector<unsigned> begin = {0};
      for (unsigned t = 0; t < tensors; ++t) {
        histories.push_back(std::make_unique<DeviceBuffer<float>>(gpu, length * slots));
        scales.push_back(std::make_unique<DeviceBuffer<float>>(gpu, slots));
        hp.push_back(histories.back()->get());
        sp.push_back(scales.back()->get());
        begin.push_back(begin.back() + slots);
      }
      DeviceBuffer<float*> d_hp(gpu, hp), d_sp(gpu, sp);
      DeviceBuffer<float> d_reduced(gpu, std::vector<float>(begin.back(), 1.0f));  // every slot rolls
      DeviceBuffer<unsigned> d_begin(gpu, begin);
      const fp8sm::kernels::ScaleUpdateRecipe recipe{Format::E4M3, 0, fp8sm::kernels::AmaxComputeAlgo::Max,
                                                     fp8sm::kernels::UpdatePath::Fused};
      const double ms = time_ms(repeats, [&] {
        gpu.scale_update(d_hp.get(), d_sp.get(), d_reduced.get(), d_begin.get(), tensors, begin.back(), length,
                         recipe);
      });
      fmt::print(" {:16.1f}", ms * 1000.0);
    }
    fmt::print("\n");
  }

  fmt::print("\n{:<8} {:>12}\n", "m=n=k", "TFLOP/s");
  fp8sm::kernels::cuda::CublasLtGemm gemm;
  for (std::size_t side : {4096u, 8192u}) {
    DeviceBuffer<std::uint8_t> a(gpu, side * side), b(gpu, side * side);
    DeviceBuffer<float> c(gpu, side * side), scale(gpu, std::vector<float>{1.0f});
    const double ms = time_ms(repeats, [&] {
      gemm.gemm_tn(a.get(), Format::E4M3, scale.get(), b.get(), Format::E4M3, scale.get(), side, side, side, c.get());
    });
    const auto edge = static_cast<double>(side);
    fmt::print("{:<8} {:12.0f}\n", side, 2.0 * edge * edge * edge / (ms * 1e9));
  }
  return 0;
}
