#include "explorer/search/layer_expansion.hpp"

#include <fmt/core.h>

#include <atomic>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <system_error>
#include <thread>

#include "explorer/search/test_faults.hpp"

namespace fp8sm::explorer {

namespace {
constexpr std::size_t kWindowPerThread = 256;  // parents expanded ahead of the consumer, per thread
// Parents a thread claims at once: neighbours in key order share most of their path, and a
// thread's cursor replays only the codes past the path it rebuilt last (one parent at a time,
// two threads replayed 27 % more codes than one at (2, 2, 1) to depth 12, 49 % more at depth 6;
// in runs of 16, 9 % more).
constexpr std::size_t kRun = 16;
// The consumer is shown the chains of the parent this many after the one it consumes: far
// enough for the cache lines asked for to arrive before they are read.
constexpr std::size_t kLookAhead = 1;
}  // namespace

// What one expanding thread works with: its own cursor on the model, and the codes of the
// statements that may follow the parent it stands on.
struct LayerExpansion::Scratch {
  explicit Scratch(const SearchModel& model) : cursor(model.cursor()) {}
  std::unique_ptr<ModelCursor> cursor;
  std::vector<StatementCode> next;
};

LayerExpansion::LayerExpansion(const EngineOptions& options, const SearchModel& model)
    : coverage_(options.coverage), close_(model.close_code()) {
  const int threads = std::max(1, options.threads);
  for (int t = 0; t < threads; ++t) scratch_.push_back(std::make_unique<Scratch>(model));
}

LayerExpansion::~LayerExpansion() = default;

// One statement on the parent, then the closes until the state is at top level (closing is
// free: all of these states belong to the next layer). A chain that reaches a state past the
// model's bounds is dropped whole: the statement is not taken. Program ends are judged by the model
// where the state is at hand.
void LayerExpansion::extend(StatementCode code, Scratch& scratch, Links& chains) const {
  std::vector<std::uint16_t>* rows = coverage_ ? &chains.rows : nullptr;
  const std::size_t chain_begin = chains.links.size();
  const std::size_t rows_begin = chains.rows.size();
  StatementCode via = code;
  for (bool on_child = false;; on_child = true) {
    const ModelStep step = scratch.cursor->step(via, on_child, rows);
    if (step.out_of_bounds) {
      // Past the model's bounds: the statement is not taken, nor any link of its chain.
      chains.links.resize(chain_begin);
      chains.rows.resize(rows_begin);
      return;
    }
    Link& link = chains.links.emplace_back();
    link.via = via;
    link.violations = step.violations;
    link.fingerprint = step.fingerprint;
    link.top_level = step.top_level;
    link.end_violations = step.end_violations;
    link.rows_end = static_cast<std::uint32_t>(chains.rows.size());
    if (link.top_level) break;
    via = close_;
  }
}

void LayerExpansion::expand_parent(const Frontier& frontier, std::size_t index, Scratch& scratch, Links& out) const {
  scratch.cursor->stand_on(frontier[index].path, scratch.next);
  for (StatementCode code : scratch.next) extend(code, scratch, out);
}

// Workers claim parents in index order (each the next free run within the window); the
// calling thread is one of them and also consumes the parents' chains in index order as they
// become ready, so the consumer's work overlaps expansion instead of a round of expansion
// waiting for it.
void LayerExpansion::expand(const Frontier& frontier, std::size_t begin, std::size_t end, const Consumer& consume,
                            const Lookahead& look_ahead) {
  const std::size_t threads = scratch_.size();
  const std::size_t n = end - begin;
  // The window's slots, kept from call to call with their buffers' capacity (a layer of several
  // ranks is expanded in many short calls).
  const std::size_t slots = kWindowPerThread * threads;
  if (produced_.size() != slots) {
    produced_.resize(slots);
    ready_.reset(new std::atomic<bool>[slots]);
  }
  std::vector<Links>& produced = produced_;
  std::atomic<bool>* ready = ready_.get();
  for (std::size_t i = 0; i < slots; ++i) {
    produced[i].clear();  // a call that stopped early may have left chains behind
    ready[i].store(false, std::memory_order_relaxed);
  }
  std::atomic<std::size_t> cursor{0};    // the next parent to claim (relative to begin)
  std::atomic<std::size_t> consumed{0};  // parents consumed so far
  std::atomic<bool> stop{false};         // the consumer stopped, or a thread failed: claim nothing more

  // Claims and expands a run of parents if one is free within the window; false if none was.
  auto expand_one = [&](Scratch& scratch) {
    std::size_t i = cursor.load(std::memory_order_relaxed);
    const std::size_t limit = std::min(n, consumed.load(std::memory_order_acquire) + slots);
    if (i >= limit) return false;
    const std::size_t run_end = std::min(limit, i + kRun);
    if (!cursor.compare_exchange_weak(i, run_end, std::memory_order_relaxed)) return true;  // lost the race: retry
    for (; i < run_end; ++i) {
      expand_parent(frontier, begin + i, scratch, produced[i % slots]);
      ready[i % slots].store(true, std::memory_order_release);
    }
    return true;
  };
  std::mutex failure_mutex;
  std::exception_ptr failure;
  auto fail = [&] {
    std::lock_guard<std::mutex> lock(failure_mutex);
    if (!failure) failure = std::current_exception();
    stop.store(true, std::memory_order_release);
  };
  auto worker = [&](Scratch& scratch) {
    try {
      while (!stop.load(std::memory_order_acquire) && cursor.load(std::memory_order_relaxed) < n) {
        if (!expand_one(scratch)) std::this_thread::yield();  // the window is full: the consumer is behind
      }
    } catch (...) {
      fail();
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(threads);
  for (std::size_t t = 1; t < threads && t < n; ++t) {
    try {
      test_thread_start_fault(t + 1);
      pool.emplace_back(worker, std::ref(*scratch_[t]));
    } catch (const std::system_error& e) {
      // A std::thread destroyed unjoined ends the program (std::terminate): the threads started
      // so far stop and are joined before the failure goes up as one error.
      stop.store(true, std::memory_order_release);
      for (std::thread& started : pool) started.join();
      throw std::runtime_error(fmt::format("cannot start worker thread {} of {}: {}", t + 1, threads,
                                           e.code().message()));
    }
  }
  try {
    for (std::size_t m = 0; m < n && !stop.load(std::memory_order_acquire);) {
      if (ready[m % slots].load(std::memory_order_acquire)) {
        Links& links = produced[m % slots];
        if (look_ahead && m + kLookAhead < n && ready[(m + kLookAhead) % slots].load(std::memory_order_acquire)) {
          look_ahead(produced[(m + kLookAhead) % slots]);
        }
        const bool go_on = consume(begin + m, links);
        links.clear();  // its capacity stays for the next parent in that slot
        ready[m % slots].store(false, std::memory_order_relaxed);
        consumed.store(++m, std::memory_order_release);
        if (!go_on) stop.store(true, std::memory_order_release);
      } else if (!expand_one(*scratch_[0])) {
        std::this_thread::yield();  // the next parent to consume is being expanded by a worker
      }
    }
  } catch (...) {
    fail();
  }
  stop.store(true, std::memory_order_release);
  for (std::thread& t : pool) t.join();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace fp8sm::explorer
