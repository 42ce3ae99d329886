#include "explorer/search/mpi_ranks.hpp"

#include <mpi.h>
#include <fmt/core.h>

#include <climits>
#include <cstdlib>
#include <deque>
#include <stdexcept>

namespace fp8sm::explorer {

namespace {

// MPI counts are ints: a buffer past 2 GiB must be refused, not truncated.
int count_of(std::size_t bytes) {
  if (bytes > static_cast<std::size_t>(INT_MAX)) {
    throw std::length_error(fmt::format("an MPI message of {} bytes is larger than MPI can count", bytes));
  }
  return static_cast<int>(bytes);
}

// A message goes as its size (8 bytes: small enough that MPI delivers it at once, whatever the
// sender does next) and then its bytes. The receiver posts the receive of the bytes as soon as
// it sees the size, so the bytes move while both ranks compute, inside their progress() calls,
// instead of only once the receiver asks for them (a large message moves only while both sides
// are inside MPI).
constexpr int kSizeTag = 14;
constexpr int kBytesTag = 15;

}  // namespace

bool launched_by_mpi() {
  for (const char* variable : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"}) {
    if (std::getenv(variable) != nullptr) return true;
  }
  return false;
}

MpiSession::MpiSession(int& argc, char**& argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  if (provided < MPI_THREAD_FUNNELED) {
    MPI_Finalize();
    throw std::runtime_error("the MPI library does not support MPI_THREAD_FUNNELED");
  }
}

MpiSession::~MpiSession() { MPI_Finalize(); }

void MpiSession::abort_job(int status) {
  MPI_Abort(MPI_COMM_WORLD, status);
  std::_Exit(status);
}

struct MpiRanks::Comm {
  MPI_Comm comm = MPI_COMM_NULL;
};

struct MpiRanks::Messages {
  struct Outgoing {
    std::uint64_t size = 0;
    Bytes bytes;
    MPI_Request requests[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  };
  struct Incoming {
    Bytes bytes;
    MPI_Request request = MPI_REQUEST_NULL;
  };
  std::deque<Outgoing> sent;                   // oldest first
  std::vector<std::deque<Incoming>> arriving;  // per sender, in the order sent
};

MpiRanks::MpiRanks() : comm_(new Comm), messages_(new Messages) {
  MPI_Comm_dup(MPI_COMM_WORLD, &comm_->comm);
  MPI_Comm_rank(comm_->comm, &rank_);
  MPI_Comm_size(comm_->comm, &size_);
  messages_->arriving.resize(static_cast<std::size_t>(size_));
}

MpiRanks::~MpiRanks() {
  for (Messages::Outgoing& out : messages_->sent) MPI_Waitall(2, out.requests, MPI_STATUSES_IGNORE);
  delete messages_;
  MPI_Comm_free(&comm_->comm);
  delete comm_;
}

void MpiRanks::send(int to, Bytes message) {
  count_sent(message.size());
  Messages::Outgoing& out = messages_->sent.emplace_back();
  out.size = message.size();
  out.bytes = std::move(message);
  MPI_Isend(&out.size, 1, MPI_UINT64_T, to, kSizeTag, comm_->comm, &out.requests[0]);
  MPI_Isend(out.bytes.data(), count_of(out.bytes.size()), MPI_BYTE, to, kBytesTag, comm_->comm, &out.requests[1]);
  progress();
}

void MpiRanks::progress() {
  // Sizes that have arrived: post the receives of their bytes.
  for (int from = 0; from < size_; ++from) {
    if (from == rank_) continue;
    for (;;) {
      int arrived = 0;
      MPI_Iprobe(from, kSizeTag, comm_->comm, &arrived, MPI_STATUS_IGNORE);
      if (arrived == 0) break;
      std::uint64_t bytes = 0;
      MPI_Recv(&bytes, 1, MPI_UINT64_T, from, kSizeTag, comm_->comm, MPI_STATUS_IGNORE);
      Messages::Incoming& in = messages_->arriving[static_cast<std::size_t>(from)].emplace_back();
      in.bytes.resize(bytes);
      MPI_Irecv(in.bytes.data(), count_of(bytes), MPI_BYTE, from, kBytesTag, comm_->comm, &in.request);
    }
  }
  // Every message in flight moves; the buffers of those sent and received are freed.
  for (auto& arriving : messages_->arriving) {
    for (Messages::Incoming& in : arriving) {
      int done = 0;
      MPI_Test(&in.request, &done, MPI_STATUS_IGNORE);
    }
  }
  for (Messages::Outgoing& out : messages_->sent) {
    int done = 0;
    MPI_Testall(2, out.requests, &done, MPI_STATUSES_IGNORE);
  }
  while (!messages_->sent.empty() && messages_->sent.front().requests[0] == MPI_REQUEST_NULL &&
         messages_->sent.front().requests[1] == MPI_REQUEST_NULL) {
    messages_->sent.pop_front();
  }
}

Bytes MpiRanks::receive(int from) {
  auto& arriving = messages_->arriving[static_cast<std::size_t>(from)];
  if (arriving.empty()) {
    std::uint64_t bytes = 0;
    MPI_Recv(&bytes, 1, MPI_UINT64_T, from, kSizeTag, comm_->comm, MPI_STATUS_IGNORE);
    Messages::Incoming& in = arriving.emplace_back();
    in.bytes.resize(bytes);
    MPI_Irecv(in.bytes.data(), count_of(bytes), MPI_BYTE, from, kBytesTag, comm_->comm, &in.request);
  }
  Messages::Incoming& in = arriving.front();
  MPI_Wait(&in.request, MPI_STATUS_IGNORE);
  Bytes message = std::move(in.bytes);
  arriving.pop_front();
  return message;
}

std::vector<Bytes> MpiRanks::all_gather(const Bytes& mine) {
  const auto ranks = static_cast<std::size_t>(size_);
  std::vector<int> counts(ranks);
  int my_count = count_of(mine.size());
  MPI_Allgather(&my_count, 1, MPI_INT, counts.data(), 1, MPI_INT, comm_->comm);
  std::vector<int> displacements(ranks);
  std::size_t total = 0;
  for (std::size_t r = 0; r < ranks; ++r) {
    displacements[r] = count_of(total);
    total += static_cast<std::size_t>(counts[r]);
  }
  Bytes all(total);
  MPI_Allgatherv(mine.data(), my_count, MPI_BYTE, all.data(), counts.data(), displacements.data(), MPI_BYTE,
                 comm_->comm);
  std::vector<Bytes> out(ranks);
  for (std::size_t r = 0; r < ranks; ++r) {
    const auto begin = all.begin() + displacements[r];
    out[r].assign(begin, begin + counts[r]);
  }
  return out;
}

void MpiRanks::all_reduce(std::uint64_t* values, std::size_t n, Reduce op) {
  const MPI_Op mpi_op = op == Reduce::Sum ? MPI_SUM : op == Reduce::Min ? MPI_MIN : MPI_MAX;
  MPI_Allreduce(MPI_IN_PLACE, values, count_of(n), MPI_UINT64_T, mpi_op, comm_->comm);
}

void MpiRanks::barrier() { MPI_Barrier(comm_->comm); }

}  // namespace fp8sm::explorer
