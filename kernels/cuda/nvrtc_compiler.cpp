#include "kernels/cuda/nvrtc_compiler.hpp"

#include <nvrtc.h>
#include <xxhash.h>
#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <sys/stat.h>
#include <unistd.h>

namespace fp8sm::kernels::cuda {

const std::vector<std::pair<std::string, std::string>>& embedded_kernel_files();  // generated

namespace {

void check(nvrtcResult result, const std::string& what) {
  if (result != NVRTC_SUCCESS) throw std::runtime_error(fmt::format("{}: {}", what, nvrtcGetErrorString(result)));
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string default_cache_dir() {
  if (const char* dir = std::getenv("FP8SM_KERNEL_CACHE"); dir != nullptr && *dir != '\0') return dir;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0') {
    return fmt::format("{}/fp8sm/kernels", xdg);
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    return fmt::format("{}/.cache/fp8sm/kernels", home);
  }
  return "-";
}

// mkdir -p; false if it cannot be made (the disk cache is then skipped, not an error).
bool make_directories(const std::string& path) {
  for (std::size_t at = 1; at <= path.size(); ++at) {
    if (at == path.size() || path[at] == '/') {
      const std::string prefix = path.substr(0, at);
      if (::mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) return false;
    }
  }
  return true;
}

// A hash of everything the CUBIN depends on: every kernel file (headers included), the
// options, the architecture, NVRTC's version.
std::string cache_key(const std::string& program, int arch) {
  // NUL-separated, so that no two lists of parts read the same.
  std::string material = program + '\0' + fmt::to_string(arch) + '\0' + NvrtcCompiler::nvrtc_version() + '\0';
  for (const std::string& option : NvrtcCompiler::options()) material += option + '\0';
  for (const auto& [name, text] : kernel_files()) material += name + '\0' + text + '\0';
  const XXH128_hash_t hash = XXH3_128bits(material.data(), material.size());
  return fmt::format("{}-sm{}-{:016x}{:016x}", program.substr(0, program.size() - 3), arch, hash.high64, hash.low64);
}

}  // namespace

const std::vector<std::pair<std::string, std::string>>& kernel_files() { return embedded_kernel_files(); }

std::vector<std::string> kernel_programs() {
  std::vector<std::string> programs;
  for (const auto& [name, text] : kernel_files()) {
    if (ends_with(name, ".cu")) programs.push_back(name);
  }
  return programs;
}

const std::vector<std::string>& NvrtcCompiler::options() {
  // No fused multiply-add contraction: the CPU reference rounds every product.
  static const std::vector<std::string> opts = {"--std=c++17", "--fmad=false"};
  return opts;
}

std::string NvrtcCompiler::nvrtc_version() {
  int major = 0;
  int minor = 0;
  check(nvrtcVersion(&major, &minor), "nvrtcVersion");
  return fmt::format("{}.{}", major, minor);
}

NvrtcCompiler::NvrtcCompiler(std::string cache_dir)
    : cache_dir_(cache_dir.empty() ? default_cache_dir() : std::move(cache_dir)) {}

CompiledProgram NvrtcCompiler::compile(const std::string& program, int arch) {
  const auto& files = kernel_files();
  const auto source = std::find_if(files.begin(), files.end(), [&](const auto& f) { return f.first == program; });
  if (source == files.end() || !ends_with(program, ".cu")) {
    throw std::invalid_argument(fmt::format("NvrtcCompiler: no kernel program named '{}'", program));
  }
  const std::string key = cache_key(program, arch);
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto hit = memory_.find(key); hit != memory_.end()) {
    CompiledProgram cached = hit->second;
    cached.from_cache = true;
    return cached;
  }
  const std::string path = cache_dir_ == "-" ? "" : fmt::format("{}/{}.cubin", cache_dir_, key);
  if (!path.empty()) {
    std::ifstream in(path, std::ios::binary);
    if (in) {
      CompiledProgram cached{std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()), "", true};
      if (!cached.cubin.empty()) {
        memory_[key] = cached;
        return cached;
      }
    }
  }

  // Headers are the kernel files that are not programs.
  std::vector<const char*> header_texts;
  std::vector<const char*> header_names;
  for (const auto& [name, text] : files) {
    if (ends_with(name, ".cu")) continue;
    header_names.push_back(name.c_str());
    header_texts.push_back(text.c_str());
  }
  nvrtcProgram handle = nullptr;
  check(nvrtcCreateProgram(&handle, source->second.c_str(), program.c_str(), static_cast<int>(header_texts.size()),
                           header_texts.data(), header_names.data()),
        fmt::format("nvrtcCreateProgram({})", program));
  std::vector<std::string> all_options = options();
  all_options.push_back(fmt::format("--gpu-architecture=sm_{}", arch));
  std::vector<const char*> option_pointers;
  for (const std::string& o : all_options) option_pointers.push_back(o.c_str());
  const nvrtcResult compiled = nvrtcCompileProgram(handle, static_cast<int>(option_pointers.size()), option_pointers.data());
  std::size_t log_size = 0;
  nvrtcGetProgramLogSize(handle, &log_size);
  std::string log(log_size, '\0');
  if (log_size > 0) nvrtcGetProgramLog(handle, log.data());
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  if (compiled != NVRTC_SUCCESS) {
    nvrtcDestroyProgram(&handle);
    throw std::runtime_error(fmt::format("NVRTC could not compile {} for sm_{}:\n{}", program, arch, log));
  }
  std::size_t cubin_size = 0;
  check(nvrtcGetCUBINSize(handle, &cubin_size), "nvrtcGetCUBINSize");
  CompiledProgram result{std::string(cubin_size, '\0'), log, false};
  check(nvrtcGetCUBIN(handle, result.cubin.data()), "nvrtcGetCUBIN");
  nvrtcDestroyProgram(&handle);

  memory_[key] = result;
  if (!path.empty() && make_directories(cache_dir_)) {
    // Written aside and renamed: a concurrent reader never sees half a CUBIN.
    const std::string temporary = fmt::format("{}.tmp{}", path, ::getpid());
    std::ofstream out(temporary, std::ios::binary);
    out.write(result.cubin.data(), static_cast<std::streamsize>(result.cubin.size()));
    out.close();
    if (out) std::rename(temporary.c_str(), path.c_str());
    else std::remove(temporary.c_str());
  }
  return result;
}

}  // namespace fp8sm::kernels::cuda
