#include "kernels/cuda/host_emulation/emulated_grid.hpp"

#include <ucontext.h>

#include <fmt/core.h>

#include <algorithm>
#include <cstring>
#include <exception>
#include <memory>
#include <random>
#include <vector>

namespace fp8sm::kernels::cuda::emulation {

namespace {

// Kernel frames are small; the margin is for unoptimised (Debug) builds.
constexpr std::size_t kStackBytes = 128 * 1024;
constexpr unsigned kWarpSize = 32;
constexpr unsigned kMaxBlockThreads = 1024;

enum class Waiting { Nothing, Block, Warp };

struct Thread {
  ucontext_t context{};
  Index3 index;
  Waiting waiting = Waiting::Nothing;
  const char* site = nullptr;  // of the barrier or shuffle it waits at
  bool returned = false;
  // This lane's values in shuffles, read by the other lanes: alternate slots, so that a lane
  // can put its next value while a slower lane still reads the one before (no lane is ever
  // more than one shuffle ahead: each waits for the whole warp).
  std::uint64_t exchanged[2] = {0, 0};
  unsigned shuffles = 0;
};

struct BlockRun {
  ucontext_t scheduler{};
  std::vector<Thread> threads;
  std::vector<std::unique_ptr<char[]>> stacks;  // kept for the next block and launch
  Thread* running = nullptr;
  const std::function<void()>* body = nullptr;
  std::exception_ptr thrown;
  Index3 grid, block, block_index;
};

thread_local BlockRun* active = nullptr;

BlockRun& running_block() {
  if (active == nullptr || active->running == nullptr) {
    throw std::logic_error("CUDA host emulation: a device function was called outside run_grid");
  }
  return *active;
}

void thread_entry() {
  BlockRun& run = *active;
  try {
    (*run.body)();
  } catch (...) {
    if (!run.thrown) run.thrown = std::current_exception();
  }
  run.running->returned = true;  // returning resumes uc_link: the scheduler
}

void wait_at(Waiting what, const char* site) {
  BlockRun& run = running_block();
  Thread& self = *run.running;
  self.waiting = what;
  self.site = site;
  swapcontext(&self.context, &run.scheduler);
}

std::string thread_name(const BlockRun& run, std::size_t linear) {
  const Index3& t = run.threads[linear].index;
  const Index3& b = run.block_index;
  return fmt::format("thread ({},{},{}) of block ({},{},{})", t.x, t.y, t.z, b.x, b.y, b.z);
}

std::string what_it_does(const Thread& t) {
  if (t.returned) return "has returned";
  return fmt::format("waits at {} at {}", t.waiting == Waiting::Block ? "__syncthreads()" : "a warp barrier", t.site);
}

bool same_place(const Thread& a, const Thread& b) {
  return !a.returned && !b.returned && a.waiting == b.waiting && std::strcmp(a.site, b.site) == 0;
}

// Called when no thread can run: every one has returned or waits. Releases every warp whose
// lanes all wait at one shuffle. A warp where one lane waits at a shuffle and another is
// anywhere else can never go on: a fault.
bool release_warps(BlockRun& run) {
  bool released = false;
  for (std::size_t first = 0; first < run.threads.size(); first += kWarpSize) {
    const std::size_t end = std::min(run.threads.size(), first + kWarpSize);
    const auto shuffling = std::find_if(run.threads.begin() + static_cast<std::ptrdiff_t>(first),
                                        run.threads.begin() + static_cast<std::ptrdiff_t>(end),
                                        [](const Thread& t) { return !t.returned && t.waiting == Waiting::Warp; });
    if (shuffling == run.threads.begin() + static_cast<std::ptrdiff_t>(end)) continue;
    for (std::size_t i = first; i < end; ++i) {
      if (!same_place(run.threads[i], *shuffling)) {
        const auto lane = static_cast<std::size_t>(shuffling - run.threads.begin());
        throw KernelFault(fmt::format("CUDA host emulation: a full-warp shuffle that not every lane reaches: {} {}, {} {}",
                                      thread_name(run, lane), what_it_does(*shuffling), thread_name(run, i),
                                      what_it_does(run.threads[i])));
      }
    }
    for (std::size_t i = first; i < end; ++i) run.threads[i].waiting = Waiting::Nothing;
    released = true;
  }
  return released;
}

// Called when no thread can run and no warp was released (so none waits at a shuffle): every
// thread must wait at one and the same __syncthreads(), which then opens; a thread that has
// returned, or waits at another one, is a fault.
void release_block(BlockRun& run) {
  std::size_t waiting = 0;
  while (run.threads[waiting].returned) ++waiting;  // one has not returned: run_block checked
  for (std::size_t i = 0; i < run.threads.size(); ++i) {
    if (!same_place(run.threads[i], run.threads[waiting])) {
      throw KernelFault(
          fmt::format("CUDA host emulation: a __syncthreads() that not every thread of the block reaches: {} {}, {} {}",
                      thread_name(run, waiting), what_it_does(run.threads[waiting]), thread_name(run, i),
                      what_it_does(run.threads[i])));
    }
  }
  for (Thread& t : run.threads) t.waiting = Waiting::Nothing;
}

void run_block(BlockRun& run) {
  const unsigned count = run.block.x * run.block.y * run.block.z;
  run.threads.assign(count, Thread{});
  while (run.stacks.size() < count) run.stacks.emplace_back(new char[kStackBytes]);
  for (unsigned i = 0; i < count; ++i) {
    Thread& t = run.threads[i];
    t.index = Index3{i % run.block.x, (i / run.block.x) % run.block.y, i / (run.block.x * run.block.y)};
    getcontext(&t.context);
    t.context.uc_stack.ss_sp = run.stacks[i].get();
    t.context.uc_stack.ss_size = kStackBytes;
    t.context.uc_link = &run.scheduler;
    makecontext(&t.context, thread_entry, 0);
  }
  // Threads run in a shuffled order (fixed per block, so runs repeat): a kernel that reads what
  // another thread wrote without a barrier between them fails whichever of the two is first.
  std::vector<std::size_t> order(count);
  for (std::size_t i = 0; i < count; ++i) order[i] = i;
  std::mt19937 random(run.block_index.x * 7919u + run.block_index.y * 104729u + run.block_index.z * 1299709u);
  std::shuffle(order.begin(), order.end(), random);
  for (;;) {
    // Every thread runs until it returns or waits; then the barriers that all have reached open.
    bool all_returned = true;
    for (std::size_t i : order) {
      Thread& t = run.threads[i];
      if (!t.returned && t.waiting == Waiting::Nothing) {
        run.running = &t;
        swapcontext(&run.scheduler, &t.context);
        run.running = nullptr;
        if (run.thrown) std::rethrow_exception(run.thrown);
      }
      all_returned = all_returned && t.returned;
    }
    if (all_returned) return;
    if (!release_warps(run)) release_block(run);
  }
}

}  // namespace

void run_grid(Index3 grid, Index3 block, const std::function<void()>& thread_body) {
  if (grid.x == 0 || grid.y == 0 || grid.z == 0 || block.x == 0 || block.y == 0 || block.z == 0) {
    throw std::invalid_argument("CUDA host emulation: a launch with an empty grid or block");
  }
  if (static_cast<unsigned long long>(block.x) * block.y * block.z > kMaxBlockThreads) {
    throw std::invalid_argument("CUDA host emulation: more than 1024 threads in a block");
  }
  if (active != nullptr) throw std::logic_error("CUDA host emulation: run_grid inside a kernel");
  thread_local BlockRun run;
  run.grid = grid;
  run.block = block;
  run.body = &thread_body;
  run.thrown = nullptr;
  active = &run;
  struct Deactivate {
    ~Deactivate() { active = nullptr; }
  } deactivate;
  for (unsigned z = 0; z < grid.z; ++z) {
    for (unsigned y = 0; y < grid.y; ++y) {
      for (unsigned x = 0; x < grid.x; ++x) {
        run.block_index = Index3{x, y, z};
        run_block(run);
      }
    }
  }
}

const Index3& thread_index() { return running_block().running->index; }
const Index3& block_index() { return running_block().block_index; }
const Index3& block_dim() { return running_block().block; }
const Index3& grid_dim() { return running_block().grid; }

void sync_block(const char* site) { wait_at(Waiting::Block, site); }
void sync_warp(const char* site) { wait_at(Waiting::Warp, site); }

std::uint64_t shuffle_down(unsigned mask, std::uint64_t value, unsigned delta, const char* site) {
  BlockRun& run = running_block();
  if (mask != 0xFFFFFFFFu) {
    throw KernelFault("CUDA host emulation: only full-warp shuffles (mask 0xFFFFFFFF) are emulated");
  }
  Thread& self = *run.running;
  const unsigned slot = self.shuffles++ % 2;
  self.exchanged[slot] = value;
  wait_at(Waiting::Warp, site);  // every lane has put its value
  const std::size_t me = static_cast<std::size_t>(&self - run.threads.data());
  const std::size_t source = me + delta;
  const bool inside = (me % kWarpSize) + delta < kWarpSize && source < run.threads.size();
  return inside ? run.threads[source].exchanged[slot] : value;
}

}  // namespace fp8sm::kernels::cuda::emulation
