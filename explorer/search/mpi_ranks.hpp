// The ranks of a search as MPI processes (`mpirun -np K explorer --depth N`). Built when MPI
// is found (explorer/CMakeLists.txt); the explorer uses it only when an MPI launcher started
// it, so the same binary runs alone exactly as a one-process search.
#pragma once

#include "explorer/search/ranks.hpp"

namespace fp8sm::explorer {

// Whether an MPI launcher (Open MPI's mpirun, a PMI or PMIx launcher such as srun) started this
// process, as one rank of a job: its environment says so before MPI is initialised.
bool launched_by_mpi();

// MPI initialised for the lifetime of the object (funneled: only the thread that made it calls
// MPI; the search's worker threads never do), finalised after.
class MpiSession {
 public:
  MpiSession(int& argc, char**& argv);
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
  // Ends every rank of the job now with `status` (a rank that cannot go on alone).
  [[noreturn]] static void abort_job(int status);
};

class MpiRanks final : public Ranks {
 public:
  MpiRanks();
  ~MpiRanks() override;
  MpiRanks(const MpiRanks&) = delete;
  MpiRanks& operator=(const MpiRanks&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void send(int to, Bytes message) override;
  Bytes receive(int from) override;
  void progress() override;
  std::vector<Bytes> all_gather(const Bytes& mine) override;
  void all_reduce(std::uint64_t* values, std::size_t n, Reduce op) override;
  void barrier() override;

 private:
  struct Comm;
  Comm* comm_;  // the search's own communicator (a duplicate of MPI_COMM_WORLD)
  int rank_ = 0;
  int size_ = 1;
  struct Messages;
  Messages* messages_;  // sent and not yet known to be received; announced and not yet taken
};

}  // namespace fp8sm::explorer
