// Whether this process can use a CUDA GPU, and if not, why: the runtime API loads the driver
// library at run time, so binaries built here run on machines without one and say so.
#pragma once

#include <string>

namespace fp8sm::kernels::cuda {

struct DeviceStatus {
  bool usable = false;
  std::string why;   // when not usable: the CUDA runtime's own words
  int device = -1;
  int arch = 0;      // compute capability as major * 10 + minor
  std::string name;
};

// Device 0, or why there is none. Cheap after the first call.
const DeviceStatus& device_status();

// Throws std::runtime_error with `what` and the CUDA error's text unless `status` is success.
void check_cuda(int status, const char* what);

}  // namespace fp8sm::kernels::cuda
