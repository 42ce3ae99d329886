// An AmaxReductionGroup over an MPI communicator, for data-parallel training launched with
// mpirun. Built only when CMake finds MPI (library fp8sm_amax_reduction_mpi).
//
//   MPI_Init(&argc, &argv);
//   {
//     fp8sm::runtime::MpiGroup world;                   // every rank of MPI_COMM_WORLD
//     fp8sm::runtime::reduce_and_update(key, &world, true, recipe);
//   }                                                    // before MPI_Finalize
//   MPI_Finalize();
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

#include "runtime/amax_reduction.hpp"

namespace fp8sm::runtime {

class MpiGroup final : public AmaxReductionGroup {
 public:
  // Collective over `communicator`: every one of its ranks constructs its MpiGroup together.
  // The group works on a duplicate of the communicator, so its reductions never match the
  // caller's own messages, and errors on it come back as return codes (MPI_ERRORS_RETURN)
  // instead of aborting, without changing the caller's error handler. `name` is for messages;
  // empty: the communicator's MPI name. Throws std::runtime_error when MPI is not initialised
  // or a call fails.
  explicit MpiGroup(MPI_Comm communicator = MPI_COMM_WORLD, std::string name = "");
  ~MpiGroup() override;  // frees the duplicate, unless MPI is finalised already
  MpiGroup(const MpiGroup&) = delete;
  MpiGroup& operator=(const MpiGroup&) = delete;

  int size() const override { return size_; }
  int rank() const override { return rank_; }

  // MPI_Allreduce with MPI_MAX over MPI_INT32_T of the amaxes' amax_order_key values, decoded
  // back (amax_order.hpp): integer MAX is exact and deterministic, and makes a NaN win. A
  // first, small all-reduce checks that every rank gave the same number of amaxes (MPI leaves
  // a mismatch undefined); if not, every rank throws std::runtime_error with both counts. MPI
  // failures throw std::runtime_error with MPI's error string.
  void all_reduce_max(std::vector<float>& amaxes) override;

  std::string name() const override { return name_; }

 private:
  void check(int status, const char* call) const;

  MPI_Comm communicator_ = MPI_COMM_NULL;
  std::string name_;
  int size_ = 0;
  int rank_ = 0;
};

}  // namespace fp8sm::runtime
