// The amax reduction over NCCL (spec §6, "Update of one registry key", step 2), on the GPU: the
// device backend hands this group a key's amaxes in device memory, and they are reduced there,
// on the backend's stream (ncclAllReduce, ncclMax over the int32 keys of amax_order.hpp, so
// that the result is MpiGroup's bit for bit, NaN included). The MPI group stays the reference.
//
//   NcclGroup::Id id = rank == 0 ? NcclGroup::unique_id() : NcclGroup::Id{};
//   MPI_Bcast(id.data(), id.size(), MPI_BYTE, 0, MPI_COMM_WORLD);   // any way to share it
//   runtime::NcclGroup group(id, size, rank);                         // collective; one GPU a rank
//   runtime::Context ctx(recipe, runtime::make_backend("cuda"), spec::Semantics::Fp8sm, &group);
//
// Built where the CUDA toolkit has NCCL (FP8SM_HAVE_NCCL); needs a usable GPU at run time.
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <vector>

#include "runtime/amax_reduction.hpp"

namespace fp8sm::runtime {

class NcclGroup final : public AmaxReductionGroup, public DeviceAmaxReduction {
 public:
  using Id = std::array<char, 128>;  // ncclUniqueId's bytes

  // A new group's id, made on one rank and given to every rank. Throws std::runtime_error with
  // NCCL's words when NCCL cannot start (no GPU).
  static Id unique_id();

  // This process as rank `rank` of `size`, on the current CUDA device: collective (every rank
  // calls it with the same id). Throws std::runtime_error with NCCL's words.
  NcclGroup(const Id& id, int size, int rank);
  ~NcclGroup() override;
  NcclGroup(const NcclGroup&) = delete;
  NcclGroup& operator=(const NcclGroup&) = delete;

  int size() const override { return size_; }
  int rank() const override { return rank_; }
  std::string name() const override;
  // Host amaxes: copied to the GPU, reduced, copied back (synchronously).
  void all_reduce_max(std::vector<float>& amaxes) override;
  // On the device, asynchronously on `stream`: keys, ncclAllReduce, amaxes.
  void all_reduce_max_on_device(kernels::cuda::Device& device, float* amaxes, std::size_t count,
                                void* stream) override;

 private:
  void* comm_ = nullptr;  // ncclComm_t
  int size_;
  int rank_;
};

}  // namespace fp8sm::runtime
