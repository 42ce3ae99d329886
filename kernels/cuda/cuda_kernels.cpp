#include "kernels/cuda/cuda_kernels.hpp"

#include <cuda_runtime_api.h>

#include <stdexcept>

#include "kernels/cuda/cuda_device.hpp"

namespace fp8sm::kernels::cuda {

namespace {

// Every entry point of every program (the names the .cu files export).
const std::map<std::string, std::vector<std::string>>& entry_points() {
  static const std::map<std::string, std::vector<std::string>> entries = {
      {"cast.cu", {"fp8sm_cast_f32_e4m3", "fp8sm_cast_f32_e5m2", "fp8sm_cast_bf16_e4m3", "fp8sm_cast_bf16_e5m2"}},
      {"cast_transpose.cu",
       {"fp8sm_cast_transpose_f32_e4m3", "fp8sm_cast_transpose_f32_e5m2", "fp8sm_cast_transpose_bf16_e4m3",
        "fp8sm_cast_transpose_bf16_e5m2"}},
      {"dequantize.cu", {"fp8sm_dequantize_e4m3", "fp8sm_dequantize_e5m2"}},
      {"gemm.cu",
       {"fp8sm_gemm_tn_e4m3_e4m3", "fp8sm_gemm_tn_e4m3_e5m2", "fp8sm_gemm_tn_e5m2_e4m3", "fp8sm_gemm_tn_e5m2_e5m2"}},
      {"scale_update.cu", {"fp8sm_scale_update"}},
  };
  return entries;
}

const char* suffix(Format format) { return format == Format::E4M3 ? "e4m3" : "e5m2"; }

unsigned blocks_for(std::size_t count, unsigned threads) {
  const std::size_t blocks = (count + threads - 1) / threads;
  return static_cast<unsigned>(blocks < 65535u * 16u ? (blocks == 0 ? 1 : blocks) : 65535u * 16u);  // grid-stride beyond
}

void launch(const void* kernel, dim3 grid, dim3 block, void** args, void* stream, const char* what) {
  check_cuda(cudaLaunchKernel(kernel, grid, block, args, 0, static_cast<cudaStream_t>(stream)), what);
}

}  // namespace

CudaKernels::CudaKernels(NvrtcCompiler& compiler) {
  const DeviceStatus& device = device_status();
  if (!device.usable) throw std::runtime_error("CudaKernels: " + device.why);
  arch_ = device.arch;
  for (const auto& [program, names] : entry_points()) {
    const CompiledProgram compiled = compiler.compile(program, arch_);
    cudaLibrary_t library = nullptr;
    check_cuda(cudaLibraryLoadData(&library, compiled.cubin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0),
               ("cudaLibraryLoadData(" + program + ")").c_str());
    libraries_.push_back(library);
    for (const std::string& name : names) {
      cudaKernel_t kernel = nullptr;
      check_cuda(cudaLibraryGetKernel(&kernel, library, name.c_str()), ("cudaLibraryGetKernel(" + name + ")").c_str());
      kernels_[name] = reinterpret_cast<const void*>(kernel);
    }
  }
}

CudaKernels::~CudaKernels() {
  for (void* library : libraries_) cudaLibraryUnload(static_cast<cudaLibrary_t>(library));
}

const void* CudaKernels::kernel(const std::string& name) const {
  const auto it = kernels_.find(name);
  if (it == kernels_.end()) throw std::logic_error("CudaKernels: no kernel " + name);
  return it->second;
}

void CudaKernels::cast(const void* in, bool bf16, std::size_t count, float scale, Format format, std::uint8_t* out,
                       float* amax, void* stream) const {
  if (count == 0) return;
  unsigned long long n = count;
  void* args[] = {&in, &n, &scale, &out, &amax};
  const std::string name = std::string("fp8sm_cast_") + (bf16 ? "bf16_" : "f32_") + suffix(format);
  launch(kernel(name), dim3(blocks_for(count, 256)), dim3(256), args, stream, name.c_str());
}

void CudaKernels::cast_transpose(const void* in, bool bf16, std::size_t rows, std::size_t cols, float scale,
                                 Format format, std::uint8_t* out, std::uint8_t* out_t, float* amax,
                                 void* stream) const {
  if (rows == 0 || cols == 0) return;
  if (rows > 0xFFFFFFFFu || cols > 0xFFFFFFFFu) throw std::invalid_argument("cast_transpose: dimension over 2^32");
  auto r = static_cast<unsigned>(rows);
  auto c = static_cast<unsigned>(cols);
  void* args[] = {&in, &r, &c, &scale, &out, &out_t, &amax};
  const std::string name = std::string("fp8sm_cast_transpose_") + (bf16 ? "bf16_" : "f32_") + suffix(format);
  launch(kernel(name), dim3((c + 31) / 32, (r + 31) / 32), dim3(32, 8), args, stream, name.c_str());
}

void CudaKernels::dequantize(const std::uint8_t* in, std::size_t count, Format format, float scale_inv, float* out,
                             void* stream) const {
  if (count == 0) return;
  unsigned long long n = count;
  void* args[] = {&in, &n, &scale_inv, &out};
  const std::string name = std::string("fp8sm_dequantize_") + suffix(format);
  launch(kernel(name), dim3(blocks_for(count, 256)), dim3(256), args, stream, name.c_str());
}

void CudaKernels::gemm_tn_reference(const std::uint8_t* a, Format a_format, float a_scale_inv, const std::uint8_t* b,
                                    Format b_format, float b_scale_inv, std::size_t m, std::size_t n, std::size_t k,
                                    float* c, void* stream) const {
  if (m == 0 || n == 0) return;
  auto mm = static_cast<unsigned>(m);
  auto nn = static_cast<unsigned>(n);
  auto kk = static_cast<unsigned>(k);
  void* args[] = {&a, &b, &mm, &nn, &kk, &a_scale_inv, &b_scale_inv, &c};
  const std::string name = std::string("fp8sm_gemm_tn_") + suffix(a_format) + "_" + suffix(b_format);
  launch(kernel(name), dim3((nn + 15) / 16, (mm + 15) / 16), dim3(16, 16), args, stream, name.c_str());
}

void CudaKernels::scale_update(float* const* histories, float* const* scales, const float* reduced,
                               const unsigned* slot_begin, unsigned tensors, unsigned total_slots,
                               unsigned history_length, const ScaleUpdateRecipe& recipe, void* stream) const {
  if (total_slots == 0) return;
  // The same float32 constants as the CPU update.
  UpdateConstants constants = update_constants(recipe);
  int most_recent = recipe.algo == AmaxComputeAlgo::MostRecent ? 1 : 0;
  int unfused = recipe.path == UpdatePath::Unfused ? 1 : 0;
  void* args[] = {&histories, &scales, &reduced, &slot_begin, &tensors, &history_length,
                  &constants.fp8_max, &constants.scaled_max, &constants.margin_divisor, &most_recent, &unfused};
  launch(kernel("fp8sm_scale_update"), dim3((total_slots + 255) / 256), dim3(256), args, stream, "fp8sm_scale_update");
}

}  // namespace fp8sm::kernels::cuda
