// The work of a recompute's lookups, counted: MachineData::replay_entry runs three times at
// every module a recompute prepares under fp8sm (the guards HasReplayEntry and ReplayEntryIsFp8,
// the action ReplayStashedMeta). Over a storage whose lists count every element read
// (counting_storage.hpp), a lookup of the growable storage may read the open checkpoint frames
// (to find the innermost recompute) and nothing else of the machine's lists, however many runs
// the checkpoint stashed and the recompute replayed. Counting replaces timing: the lookup that
// scanned the replayed and stashed runs read O(N) entries per call, O(N^2) for a recompute of N
// runs (one reentrant checkpoint of 100 000 linears took 21 s of `explorer run`).
#include <gtest/gtest.h>

#include <cstdint>

#include "statemachine/machine_data.hpp"
#include "tests/counting_storage.hpp"

namespace fp8sm {
namespace {

using Data = statemachine::MachineData<test_support::CountingStorage>;
using statemachine::CheckpointPhase;
using test_support::element_visits;

constexpr std::uint32_t kModules = 3;

// Checkpoint 0 stashed `runs` runs, modules in turn, every other one FP8; its recompute runs
// under `frames_above` original forwards of checkpoints nested in it (which the lookup must
// look past) and replays the same modules in turn, `extra` runs more than were stashed. Returns
// the elements read per lookup.
double visits_per_lookup(std::uint32_t runs, std::uint32_t frames_above, std::uint32_t extra) {
  Data data;
  data.semantics = spec::Semantics::Fp8sm;
  data.open_stash(0);
  for (std::uint32_t i = 0; i < runs; ++i) {
    const Data::StashedRun run{0, i % kModules, i % 2 == 0};
    data.add_stash_runs(&run, 1);
  }
  data.checkpoint_frames.push_back(Data::CheckpointFrame{CheckpointPhase::Outside, 0, true});
  for (std::uint32_t f = 0; f < frames_above; ++f) {
    data.checkpoint_frames.push_back(Data::CheckpointFrame{CheckpointPhase::Recompute, 1 + f, false});
  }
  element_visits = 0;
  std::uint64_t lookups = 0;
  for (std::uint32_t i = 0; i < runs + extra; ++i) {
    const auto m = static_cast<spec::ModuleId>(i % kModules);
    for (int call = 0; call < 3; ++call) {  // as the guards and the action do
      const auto entry = data.replay_entry(m);
      ++lookups;
      EXPECT_EQ(static_cast<bool>(entry), i < runs) << "run " << i;
      if (entry && i < runs) {
        EXPECT_EQ(entry->fp8, i % 2 == 0) << "run " << i;
      }
    }
    data.replayed.push_back(Data::ReplayedRun{0, m});  // ReplayStashedMeta or SkipReplayedRun
  }
  return static_cast<double>(element_visits) / static_cast<double>(lookups);
}

TEST(ReplayWork, ALookupReadsTheOpenFramesAloneHoweverLongTheRecompute) {
  for (std::uint32_t frames_above : {0u, 5u}) {
    for (std::uint32_t runs : {1000u, 4000u}) {
      const double per_lookup = visits_per_lookup(runs, frames_above, 10);
      EXPECT_LE(per_lookup, frames_above + 2.0) << runs << " runs, " << frames_above << " frames above";
    }
  }
}

}  // namespace
}  // namespace fp8sm
