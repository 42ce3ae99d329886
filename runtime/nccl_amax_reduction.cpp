#include "runtime/nccl_amax_reduction.hpp"

#include <cuda_runtime_api.h>
#include <fmt/core.h>
#include <nccl.h>

#include <cstring>
#include <stdexcept>

#include "kernels/cuda/device.hpp"
#include "runtime/amax_order.hpp"

namespace fp8sm::runtime {

namespace {

void check(ncclResult_t result, const char* what) {
  if (result != ncclSuccess) throw std::runtime_error(fmt::format("NCCL: {}: {}", what, ncclGetErrorString(result)));
}

void check_cuda(cudaError_t result, const char* what) {
  if (result != cudaSuccess) throw std::runtime_error(fmt::format("NCCL group: {}: {}", what, cudaGetErrorString(result)));
}

}  // namespace

NcclGroup::Id NcclGroup::unique_id() {
  static_assert(sizeof(ncclUniqueId) == sizeof(Id), "ncclUniqueId is 128 bytes");
  ncclUniqueId id;
  check(ncclGetUniqueId(&id), "ncclGetUniqueId");
  Id bytes;
  std::memcpy(bytes.data(), &id, bytes.size());
  return bytes;
}

NcclGroup::NcclGroup(const Id& id, int size, int rank) : size_(size), rank_(rank) {
  if (size < 1 || rank < 0 || rank >= size) {
    throw std::invalid_argument(fmt::format("NcclGroup: rank {} of {}", rank, size));
  }
  ncclUniqueId nccl_id;
  std::memcpy(&nccl_id, id.data(), id.size());
  ncclComm_t comm = nullptr;
  check(ncclCommInitRank(&comm, size, nccl_id, rank), "ncclCommInitRank");
  comm_ = comm;
}

NcclGroup::~NcclGroup() {
  if (comm_ != nullptr) ncclCommDestroy(static_cast<ncclComm_t>(comm_));
}

std::string NcclGroup::name() const { return fmt::format("NCCL rank {} of {}", rank_, size_); }

void NcclGroup::all_reduce_max(std::vector<float>& amaxes) {
  if (amaxes.empty()) return;
  std::vector<std::int32_t> keys(amaxes.size());
  for (std::size_t i = 0; i < amaxes.size(); ++i) keys[i] = amax_order_key(amaxes[i]);
  void* device = nullptr;
  const std::size_t bytes = keys.size() * sizeof(std::int32_t);
  check_cuda(cudaMalloc(&device, bytes), "cudaMalloc");
  try {
    check_cuda(cudaMemcpy(device, keys.data(), bytes, cudaMemcpyHostToDevice), "cudaMemcpy");
    check(ncclAllReduce(device, device, keys.size(), ncclInt32, ncclMax, static_cast<ncclComm_t>(comm_), nullptr),
          "ncclAllReduce");
    check_cuda(cudaMemcpy(keys.data(), device, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy");
  } catch (...) {
    cudaFree(device);
    throw;
  }
  cudaFree(device);
  for (std::size_t i = 0; i < amaxes.size(); ++i) amaxes[i] = amax_from_order_key(keys[i]);
}

void NcclGroup::all_reduce_max_on_device(kernels::cuda::Device& device, float* amaxes, std::size_t count,
                                         void* stream) {
  if (count == 0) return;
  device.amax_to_order_keys(amaxes, count, stream);
  check(ncclAllReduce(amaxes, amaxes, count, ncclInt32, ncclMax, static_cast<ncclComm_t>(comm_),
                      static_cast<cudaStream_t>(stream)),
        "ncclAllReduce");
  device.amax_from_order_keys(amaxes, count, stream);
}

}  // namespace fp8sm::runtime
