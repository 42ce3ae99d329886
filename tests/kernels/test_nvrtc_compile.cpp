// Every runtime-compiled kernel compiles with NVRTC for every supported architecture, with no
// error and no warning (NVRTC needs no GPU); and the compiler's caches return what it compiled.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "../temporary_directory.hpp"
#include "kernels/cuda/nvrtc_compiler.hpp"

namespace fp8sm::kernels::cuda {
namespace {

TEST(NvrtcCompile, EveryKernelForEveryArchitectureWithoutWarnings) {
  const std::vector<std::string> programs = kernel_programs();
  // The programs of kernels/cuda: a new .cu file is picked up by the build, and must be here.
  for (const char* expected : {"cast.cu", "cast_transpose.cu", "dequantize.cu", "gemm.cu", "scale_update.cu"}) {
    EXPECT_NE(std::find(programs.begin(), programs.end(), expected), programs.end()) << expected;
  }
  NvrtcCompiler compiler("-");
  for (const std::string& program : programs) {
    for (int arch : supported_architectures()) {
      CompiledProgram compiled;
      ASSERT_NO_THROW(compiled = compiler.compile(program, arch)) << program << " sm_" << arch;
      EXPECT_EQ(compiled.log, "") << program << " sm_" << arch << ": NVRTC warned";
      EXPECT_GT(compiled.cubin.size(), 4u);
      EXPECT_EQ(compiled.cubin.compare(0, 4, "\x7f" "ELF"), 0) << program << " sm_" << arch << ": not an ELF CUBIN";
    }
  }
}

TEST(NvrtcCompile, CachesInMemoryAndOnDisk) {
  // A folder of its own for this run: an earlier run's CUBINs would be cache hits.
  const test_support::TemporaryDirectory temporary;
  const std::string dir = temporary.file("cache");
  NvrtcCompiler first(dir);
  const CompiledProgram compiled = first.compile("cast.cu", 90);
  EXPECT_FALSE(compiled.from_cache);
  EXPECT_TRUE(first.compile("cast.cu", 90).from_cache);          // memory
  NvrtcCompiler second(dir);
  const CompiledProgram from_disk = second.compile("cast.cu", 90);  // disk
  EXPECT_TRUE(from_disk.from_cache);
  EXPECT_EQ(from_disk.cubin, compiled.cubin);
  EXPECT_FALSE(second.compile("cast.cu", 80).from_cache);  // another architecture, another key
}

TEST(NvrtcCompile, UnknownProgramsAndErrorsAreReported) {
  NvrtcCompiler compiler("-");
  EXPECT_THROW(compiler.compile("no_such_kernel.cu", 90), std::invalid_argument);
  EXPECT_THROW(compiler.compile("fp8_device.cuh", 90), std::invalid_argument);  // a header, not a program
  EXPECT_THROW(compiler.compile("cast.cu", 10), std::runtime_error);  // no such architecture
}

}  // namespace
}  // namespace fp8sm::kernels::cuda
