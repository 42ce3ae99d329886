// The host emulation of CUDA (kernels/cuda/host_emulation/): every thread of a launch runs once
// with its indices; __syncthreads() and warp shuffles mean what they mean on the GPU; what CUDA
// leaves undefined (a barrier or shuffle not every thread reaches, a write outside a buffer)
// is a KernelFault, not a silent result.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <stdexcept>
#include <tuple>
#include <vector>

#include "kernels/cuda/device_buffer.hpp"
#include "kernels/cuda/host_emulation/emulated_device.hpp"
#include "kernels/cuda/host_emulation/emulated_grid.hpp"
#include "kernels/cuda/host_emulation/emulated_programs.hpp"

namespace fp8sm::kernels::cuda::emulation {
namespace {

unsigned linear_thread() {
  const Index3& t = thread_index();
  const Index3& d = block_dim();
  return t.x + d.x * (t.y + d.y * t.z);
}

TEST(CudaEmulation, EveryThreadOfTheGridRunsOnceWithItsIndices) {
  const Index3 grid{3, 2, 2}, block{5, 4, 2};
  std::multiset<std::tuple<unsigned, unsigned, unsigned, unsigned, unsigned, unsigned>> seen;
  run_grid(grid, block, [&] {
    EXPECT_EQ(grid_dim().x, 3u);
    EXPECT_EQ(block_dim().z, 2u);
    seen.insert({block_index().x, block_index().y, block_index().z, thread_index().x, thread_index().y,
                 thread_index().z});
  });
  EXPECT_EQ(seen.size(), 3u * 2 * 2 * 5 * 4 * 2);
  for (unsigned bz = 0; bz < 2; ++bz)
    for (unsigned by = 0; by < 2; ++by)
      for (unsigned bx = 0; bx < 3; ++bx)
        for (unsigned tz = 0; tz < 2; ++tz)
          for (unsigned ty = 0; ty < 4; ++ty)
            for (unsigned tx = 0; tx < 5; ++tx) EXPECT_EQ(seen.count({bx, by, bz, tx, ty, tz}), 1u);
}

// Each thread writes its slot, waits, then reads its neighbour's: without the barrier, of each
// pair of neighbours the one that runs first would read the other's slot unwritten.
TEST(CudaEmulation, SyncThreadsMakesEveryWriteBeforeItVisibleAfterIt) {
  const unsigned threads = 96;
  std::vector<int> shared(threads, -1), read(threads * 2, -2);
  run_grid({2, 1, 1}, {threads, 1, 1}, [&] {
    const unsigned me = linear_thread();
    shared[me] = static_cast<int>(me + 1000 * block_index().x);
    sync_block("here");
    read[block_index().x * threads + me] = shared[(me + 1) % threads];
    sync_block("there");  // the next block must not overwrite before this one has read
  });
  for (unsigned b = 0; b < 2; ++b) {
    for (unsigned t = 0; t < threads; ++t) EXPECT_EQ(read[b * threads + t], static_cast<int>((t + 1) % threads + 1000 * b));
  }
}

// Threads start in a shuffled order, the same in every run: a missing barrier is not hidden by
// the threads running in index order.
TEST(CudaEmulation, ThreadsStartInAShuffledRepeatableOrder) {
  auto start_order = [] {
    std::vector<unsigned> order;
    run_grid({1, 1, 1}, {64, 2, 1}, [&] { order.push_back(linear_thread()); });
    return order;
  };
  const std::vector<unsigned> first = start_order();
  EXPECT_EQ(first, start_order());
  std::vector<unsigned> sorted = first;
  std::sort(sorted.begin(), sorted.end());
  for (unsigned i = 0; i < sorted.size(); ++i) EXPECT_EQ(sorted[i], i);
  EXPECT_NE(first, sorted) << "threads ran in index order";
}

// __shfl_down_sync: lane l gets lane l + delta's value, or its own past the warp's end; the
// second warp of a 40-thread block has 8 lanes.
TEST(CudaEmulation, ShuffleDownReadsTheLaneDeltaAbove) {
  const unsigned threads = 40;
  for (unsigned delta : {1u, 2u, 5u, 16u, 31u}) {
    std::vector<std::uint64_t> got(threads);
    run_grid({1, 1, 1}, {threads, 1, 1}, [&] {
      const unsigned me = linear_thread();
      got[me] = shuffle_down(0xFFFFFFFFu, me * 10 + 7, delta, "shuffle");
    });
    for (unsigned t = 0; t < threads; ++t) {
      const unsigned lane = t % 32, warp_lanes = t < 32 ? 32 : threads - 32;
      const unsigned source = lane + delta < warp_lanes ? t + delta : t;
      EXPECT_EQ(got[t], source * 10 + 7) << "thread " << t << " delta " << delta;
    }
  }
}

TEST(CudaEmulation, ABarrierNotEveryThreadReachesIsAFault) {
  // Threads at two different __syncthreads().
  try {
    run_grid({1, 1, 1}, {64, 1, 1}, [&] { sync_block(linear_thread() < 16 ? "a.cu:1" : "a.cu:2"); });
    ADD_FAILURE() << "no fault";
  } catch (const KernelFault& e) {
    EXPECT_NE(std::string(e.what()).find("a.cu:1"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("a.cu:2"), std::string::npos) << e.what();
  }
  // An edge thread returned early, the others wait: the classic partial-tile bug.
  try {
    run_grid({1, 1, 1}, {32, 8, 1}, [&] {
      if (thread_index().y == 7) return;
      sync_block("tile.cu:9");
    });
    ADD_FAILURE() << "no fault";
  } catch (const KernelFault& e) {
    EXPECT_NE(std::string(e.what()).find("has returned"), std::string::npos) << e.what();
  }
}

TEST(CudaEmulation, AShuffleNotEveryLaneReachesIsAFault) {
  EXPECT_THROW(run_grid({1, 1, 1}, {32, 1, 1},
                        [&] {
                          if (linear_thread() < 16) shuffle_down(0xFFFFFFFFu, 1, 1, "half.cu:3");
                        }),
               KernelFault);
  EXPECT_THROW(run_grid({1, 1, 1}, {32, 1, 1}, [&] { shuffle_down(0x0000FFFFu, 1, 1, "mask.cu:4"); }), KernelFault);
}

TEST(CudaEmulation, WhatAThreadThrowsEndsTheLaunchAndTheNextLaunchRuns) {
  EXPECT_THROW(run_grid({2, 1, 1}, {64, 1, 1},
                        [&] {
                          sync_block("x");
                          if (linear_thread() == 40) throw std::runtime_error("thread 40");
                          sync_block("y");
                        }),
               std::runtime_error);
  int runs = 0;
  run_grid({1, 1, 1}, {8, 1, 1}, [&] { ++runs; });
  EXPECT_EQ(runs, 8);
  EXPECT_THROW(run_grid({0, 1, 1}, {1, 1, 1}, [] {}), std::invalid_argument);
  EXPECT_THROW(run_grid({1, 1, 1}, {1025, 1, 1}, [] {}), std::invalid_argument);
  EXPECT_THROW(thread_index(), std::logic_error);
}

// Every entry point the GPU loads has its host twin.
TEST(CudaEmulation, EveryGpuEntryPointIsEmulated) {
  std::size_t count = 0;
  for (const auto& [file, names] : Device::entry_points()) {
    for (const std::string& name : names) {
      EXPECT_EQ(host_kernels().count(name), 1u) << file << ": " << name;
      ++count;
    }
  }
  EXPECT_EQ(count, host_kernels().size());
}

// A launch that writes past its output (a cast of 100 values into 40 bytes) is caught by the
// guard bytes, and names the kernel.
TEST(CudaEmulation, AWriteOutsideABufferIsAFault) {
  EmulatedDevice device;
  DeviceBuffer<float> in(device, std::vector<float>(100, 1.0f)), amax(device, 1), one(device, std::vector<float>{1.0f});
  DeviceBuffer<std::uint8_t> out(device, 40);
  try {
    device.cast(in.get(), false, 100, one.get(), Format::E4M3, out.get(), amax.get());
    ADD_FAILURE() << "no fault";
  } catch (const KernelFault& e) {
    EXPECT_NE(std::string(e.what()).find("fp8sm_cast_vec_f32_e4m3"), std::string::npos) << e.what();
  }
  DeviceBuffer<std::uint8_t> enough(device, 100);
  device.cast(in.get(), false, 100, one.get(), Format::E4M3, enough.get(), amax.get());  // no fault
  EXPECT_EQ(enough.download(), std::vector<std::uint8_t>(100, 0x38));                // 1.0 in E4M3
}

}  // namespace
}  // namespace fp8sm::kernels::cuda::emulation
