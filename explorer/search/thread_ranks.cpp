#include "explorer/search/thread_ranks.hpp"

#include <algorithm>
#include <deque>
#include <stdexcept>

namespace fp8sm::explorer {

// What the ranks share: one slot per rank for each kind of collective, and a barrier that
// an aborting rank breaks.
struct ThreadRanks::Hub {
  explicit Hub(int ranks)
      : size(ranks), mailboxes(ranks, std::vector<std::deque<Bytes>>(ranks)), gathered(ranks), values(ranks) {}

  // Waits until every rank has arrived (or one aborted: then throws).
  void arrive() {
    std::unique_lock<std::mutex> lock(mutex);
    if (aborted) throw std::runtime_error("another rank of the in-process search failed");
    const std::uint64_t generation_now = generation;
    if (++arrived == size) {
      arrived = 0;
      ++generation;
      all_arrived.notify_all();
      return;
    }
    all_arrived.wait(lock, [&] { return generation != generation_now || aborted; });
    if (generation == generation_now) throw std::runtime_error("another rank of the in-process search failed");
  }
  void abort() {
    std::lock_guard<std::mutex> lock(mutex);
    aborted = true;
    all_arrived.notify_all();
    delivered.notify_all();
  }

  void post(int from, int to, Bytes message) {
    std::lock_guard<std::mutex> lock(mutex);
    mailboxes[static_cast<std::size_t>(from)][static_cast<std::size_t>(to)].push_back(std::move(message));
    delivered.notify_all();
  }
  Bytes take(int from, int to) {
    std::unique_lock<std::mutex> lock(mutex);
    auto& box = mailboxes[static_cast<std::size_t>(from)][static_cast<std::size_t>(to)];
    delivered.wait(lock, [&] { return !box.empty() || aborted; });
    if (box.empty()) throw std::runtime_error("another rank of the in-process search failed");
    Bytes message = std::move(box.front());
    box.pop_front();
    return message;
  }

  const int size;
  std::mutex mutex;
  std::condition_variable all_arrived;
  std::condition_variable delivered;
  std::vector<std::vector<std::deque<Bytes>>> mailboxes;  // [from][to]: messages not yet received
  int arrived = 0;
  std::uint64_t generation = 0;
  bool aborted = false;
  std::vector<Bytes> gathered;                     // all_gather: per rank
  std::vector<std::vector<std::uint64_t>> values;  // all_reduce: per rank
};

void ThreadRanks::run(int ranks, const std::function<void(Ranks&)>& body) {
  if (ranks < 1) throw std::invalid_argument("ThreadRanks::run: at least one rank");
  auto hub = std::make_shared<Hub>(ranks);
  std::vector<std::exception_ptr> failures(static_cast<std::size_t>(ranks));
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      ThreadRanks me(hub, r);
      try {
        body(me);
      } catch (...) {
        failures[static_cast<std::size_t>(r)] = std::current_exception();
        hub->abort();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (const std::exception_ptr& failure : failures) {
    if (failure) std::rethrow_exception(failure);
  }
}

int ThreadRanks::size() const { return hub_->size; }

std::vector<Bytes> ThreadRanks::all_gather(const Bytes& mine) {
  hub_->gathered[static_cast<std::size_t>(rank_)] = mine;
  hub_->arrive();
  std::vector<Bytes> all = hub_->gathered;
  hub_->arrive();
  return all;
}

void ThreadRanks::send(int to, Bytes message) {
  count_sent(message.size());
  hub_->post(rank_, to, std::move(message));
}

Bytes ThreadRanks::receive(int from) { return hub_->take(from, rank_); }

void ThreadRanks::all_reduce(std::uint64_t* values, std::size_t n, Reduce op) {
  hub_->values[static_cast<std::size_t>(rank_)].assign(values, values + n);
  hub_->arrive();
  for (std::size_t i = 0; i < n; ++i) {
    std::uint64_t v = op == Reduce::Sum ? 0 : hub_->values[0][i];
    for (const auto& other : hub_->values) {
      if (op == Reduce::Sum) v += other[i];
      if (op == Reduce::Min) v = std::min(v, other[i]);
      if (op == Reduce::Max) v = std::max(v, other[i]);
    }
    values[i] = v;
  }
  hub_->arrive();
}

void ThreadRanks::barrier() { hub_->arrive(); }

}  // namespace fp8sm::explorer
