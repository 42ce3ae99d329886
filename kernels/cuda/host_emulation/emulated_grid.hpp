// Runs a CUDA kernel's body on the host, one emulated thread per CUDA thread, so that the
// kernel sources of kernels/cuda/ execute (and are tested bit for bit) on machines without a
// GPU. Blocks run one after another; the threads of a block are fibers (ucontext) switched at
// every __syncthreads() and warp shuffle, so shared memory, barriers and shuffles behave as on
// the GPU. The threads of a block start, and resume after each barrier, in a shuffled order
// (the same in every run), so a missing barrier shows whichever thread it favours.
//
// It checks what CUDA leaves undefined: a __syncthreads() that not every thread of the block
// reaches (one returned, or waits at another one) and a __syncwarp() or full-warp shuffle that not
// every lane reaches end the launch with a KernelFault naming the threads and the source lines.
//
// Not emulated: concurrency between blocks (they run in order), memory ordering beyond what
// __syncthreads() gives, and timing. Shared memory is static storage reused by every block
// (`__shared__` is `static thread_local` here), so it is not reset between blocks.
#pragma once

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>

namespace fp8sm::kernels::cuda::emulation {

struct Index3 {
  unsigned x = 1, y = 1, z = 1;
};

// A kernel that would be undefined on the GPU (barrier divergence, a shuffle missing lanes).
class KernelFault : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

// Calls `thread_body` for every thread of `grid` x `block`, with threadIdx, blockIdx, blockDim
// and gridDim as CUDA defines them. Rethrows what a thread throws (after abandoning the block).
void run_grid(Index3 grid, Index3 block, const std::function<void()>& thread_body);

// What the emulated thread that is running sees (only inside run_grid's thread_body).
const Index3& thread_index();
const Index3& block_index();
const Index3& block_dim();
const Index3& grid_dim();

// __syncthreads() at `site` (a "file:line" literal): waits until every thread of the block is
// at this same barrier.
void sync_block(const char* site);
// __syncwarp() at `site`: waits until every lane of this warp is at this same place.
void sync_warp(const char* site);
// __shfl_down_sync(mask, value, delta) at `site` on 64 bits: the value of lane (lane + delta)
// of this warp, or this lane's own where that is past the warp. Every lane of the warp must be
// at the same shuffle; only full-warp masks are supported.
std::uint64_t shuffle_down(unsigned mask, std::uint64_t value, unsigned delta, const char* site);

}  // namespace fp8sm::kernels::cuda::emulation
