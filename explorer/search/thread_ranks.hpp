// K ranks of one search as K threads of one process, for tests: the distributed search's
// partitioning, exchange and agreements run exactly as under mpirun, but under the sanitizers
// and without a launcher. Collectives meet at a barrier; a rank that throws outside the
// search's agreements aborts the others' collectives (they throw instead of waiting forever).
#pragma once

#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "explorer/search/ranks.hpp"

namespace fp8sm::explorer {

class ThreadRanks final : public Ranks {
 public:
  // Calls body(ranks) on `ranks` threads, each with its own rank, and waits for them all;
  // rethrows the first exception a rank raised.
  static void run(int ranks, const std::function<void(Ranks&)>& body);

  int rank() const override { return rank_; }
  int size() const override;
  void send(int to, Bytes message) override;
  Bytes receive(int from) override;
  std::vector<Bytes> all_gather(const Bytes& mine) override;
  void all_reduce(std::uint64_t* values, std::size_t n, Reduce op) override;
  void barrier() override;

 private:
  struct Hub;
  ThreadRanks(std::shared_ptr<Hub> hub, int rank) : hub_(std::move(hub)), rank_(rank) {}

  std::shared_ptr<Hub> hub_;
  int rank_;
};

}  // namespace fp8sm::explorer
