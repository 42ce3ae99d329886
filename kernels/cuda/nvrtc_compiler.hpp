// Compiles the runtime-compiled kernels (kernels/cuda/*.cu, embedded in the binary) with NVRTC
// to a CUBIN for one GPU architecture. Needs no GPU and no driver: CI compiles every kernel
// for every architecture the project supports. Compiled CUBINs are cached in the process and
// on disk, keyed by a hash of the sources, the options, the architecture and NVRTC's version.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace fp8sm::kernels::cuda {

// The architectures CI compiles for (sm_XY as XY).
inline const std::vector<int>& supported_architectures() {
  static const std::vector<int> archs = {80, 89, 90, 100, 120};
  return archs;
}

// Every kernel source and header, as (file name, text).
const std::vector<std::pair<std::string, std::string>>& kernel_files();
// The names of the .cu files among them (each one program).
std::vector<std::string> kernel_programs();

struct CompiledProgram {
  std::string cubin;
  std::string log;  // NVRTC's log: empty when there was neither warning nor error
  bool from_cache = false;
};

class NvrtcCompiler {
 public:
  // `cache_dir` empty: $FP8SM_KERNEL_CACHE, else $XDG_CACHE_HOME/fp8sm/kernels, else
  // $HOME/.cache/fp8sm/kernels; "-" turns the disk cache off.
  explicit NvrtcCompiler(std::string cache_dir = "");

  // Compiles `program` (a kernel_programs() name) for sm_`arch`, or takes it from the caches
  // (this compiler's memory, then the disk). Throws std::invalid_argument for an unknown
  // program and std::runtime_error with NVRTC's log on a compile error. A warning is not an
  // error: it is in `log`.
  CompiledProgram compile(const std::string& program, int arch);
  // The options every program is compiled with (besides the architecture).
  static const std::vector<std::string>& options();

  const std::string& cache_dir() const { return cache_dir_; }
  static std::string nvrtc_version();

 private:
  std::string cache_dir_;
  std::mutex mutex_;
  std::map<std::string, CompiledProgram> memory_;  // by cache key
};

}  // namespace fp8sm::kernels::cuda
