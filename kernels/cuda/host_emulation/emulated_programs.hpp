// The entry points of kernels/cuda/*.cu compiled for the host (emulated_programs.cpp), by name,
// each callable like cudaLaunchKernel calls a kernel: with an array of pointers to the
// arguments. Run them inside emulation::run_grid.
#pragma once

#include <functional>
#include <map>
#include <string>

namespace fp8sm::kernels::cuda::emulation {

using HostKernel = std::function<void(void** args)>;

const std::map<std::string, HostKernel>& host_kernels();

}  // namespace fp8sm::kernels::cuda::emulation
