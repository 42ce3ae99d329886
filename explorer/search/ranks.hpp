// The processes of one search and what they say to each other. A search over K ranks
// partitions the states by fingerprint (owner_of): each rank keeps its part of the seen-set and
// of the frontier, expands the states it owns, and sends every successor to its owner. It
// needs messages from one rank to another, delivered in the order sent, and a few collective
// operations (an all-gather, a reduction of integers, a barrier), all called from one thread,
// the collectives by every rank in the same order.
//
// SingleRank is the one-process search (nothing to send). ThreadRanks (thread_ranks.hpp)
// runs K ranks as threads of one process, so the tests and the sanitizers see the distributed
// search without a launcher; MpiRanks (mpi_ranks.hpp) are processes under mpirun.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "explorer/model/fingerprint.hpp"

namespace fp8sm::explorer {

using Bytes = std::vector<std::uint8_t>;

class Ranks {
 public:
  enum class Reduce { Sum, Min, Max };

  virtual ~Ranks() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Sends `message` to rank `to` (another rank) and returns without waiting for it to be
  // received. Messages from one rank to another arrive in the order they were sent.
  virtual void send(int to, Bytes message) = 0;
  // The next message from rank `from` (another rank), waiting for it if need be.
  virtual Bytes receive(int from) = 0;
  // Lets the messages in flight move while this rank computes: MPI moves a large message only
  // inside its calls, on both sides, so the search calls this every few states it expands.
  virtual void progress() {}
  // What every rank gave, in rank order, on every rank.
  virtual std::vector<Bytes> all_gather(const Bytes& mine) = 0;
  // values[i] becomes the sum (minimum, maximum) over the ranks of their values[i].
  virtual void all_reduce(std::uint64_t* values, std::size_t n, Reduce op) = 0;
  virtual void barrier() = 0;

  std::uint64_t sum(std::uint64_t value) { return reduced(value, Reduce::Sum); }
  std::uint64_t min(std::uint64_t value) { return reduced(value, Reduce::Min); }
  std::uint64_t max(std::uint64_t value) { return reduced(value, Reduce::Max); }
  // Bytes this rank has sent to other ranks (the network's share of a search).
  std::uint64_t bytes_sent() const { return bytes_sent_; }

 protected:
  void count_sent(std::uint64_t bytes) { bytes_sent_ += bytes; }

 private:
  std::uint64_t reduced(std::uint64_t value, Reduce op) {
    all_reduce(&value, 1, op);
    return value;
  }
  std::uint64_t bytes_sent_ = 0;
};

// The rank that owns a state: from the fingerprint's low word's high half, bits the seen-set
// neither places by nor keeps (fingerprint_set.hpp): its homes stay uniform within a rank.
inline int owner_of(const Fingerprint& fingerprint, int ranks) {
  return static_cast<int>(((fingerprint.low >> 32) * static_cast<std::uint64_t>(ranks)) >> 32);
}

class SingleRank final : public Ranks {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  void send(int to, Bytes message) override;
  Bytes receive(int from) override;
  std::vector<Bytes> all_gather(const Bytes& mine) override { return {mine}; }
  void all_reduce(std::uint64_t*, std::size_t, Reduce) override {}
  void barrier() override {}
};

// A failure on some rank, agreed by all of them (search.cpp's agreement): the message names the
// rank, so the one line printed says where it happened.
class RankFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace fp8sm::explorer
