// Data-parallel amax reduction with real MPI ranks (run by ctest under mpirun -np 2; any
// number of ranks >= 2 works). Every rank casts different data into the same registry key and
// updates it with reduce_and_update over an MpiGroup. After every step:
// - every rank holds the same amax histories and scales, byte for byte (gathered to rank 0);
// - and they are what one process computes: casting each rank's inputs (every rank can
//   generate every other's from its seed), folding the ranks' row-0 amaxes together with the
//   cast's own accumulator (kernels::amax_fold), and updating with kernels::update_scales.
// One step puts a NaN into one rank's inputs, another a negative NaN with a payload into
// another's; both must reach every rank's history the same way. Also checked: the reduction's
// order on hand-picked values (-0, NaN of both signs, payloads), that ranks passing different
// amax counts all get an error instead of a hang, that a group of one does not reduce, and
// that an MpiGroup before MPI_Init is an error.
// Exit status 0 when all holds; 1 with one line per mismatch on standard error.
#include <fmt/format.h>
#include <mpi.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/amax.hpp"
#include "kernels/cast.hpp"
#include "kernels/scale_update.hpp"
#include "kernels/scaling_meta.hpp"
#include "runtime/amax_reduction.hpp"
#include "runtime/mpi_amax_reduction.hpp"

namespace {

using fp8sm::kernels::AmaxComputeAlgo;
using fp8sm::kernels::Format;
using fp8sm::kernels::ScaleUpdateRecipe;
using fp8sm::kernels::ScalingMeta;
using fp8sm::kernels::UpdatePath;
using fp8sm::runtime::MpiGroup;

struct Config {
  const char* name;
  ScaleUpdateRecipe recipe;
};

const std::vector<Config> kConfigs = {
    {"fused max E4M3", {Format::E4M3, 0, AmaxComputeAlgo::Max, UpdatePath::Fused}},
    {"fused most_recent E5M2 margin 1",
     {Format::E5M2, 1, AmaxComputeAlgo::MostRecent, UpdatePath::Fused}},
    {"unfused max E4M3 margin 2", {Format::E4M3, 2, AmaxComputeAlgo::Max, UpdatePath::Unfused}},
};
constexpr std::size_t kHistoryLength = 16;
const std::vector<std::size_t> kSlotsPerMeta = {3, 1, 2};  // one key of three modules
constexpr int kSteps = 20;
constexpr std::size_t kElements = 64;  // per cast
// The last rank casts a NaN into meta 0, slot 0; rank 0 a negative NaN into meta 2, slot 1.
constexpr int kNanStep = 7;
constexpr int kNegativeNanStep = 12;
constexpr std::uint32_t kNegativeNanBits = 0xFFC00123u;

std::uint32_t bits_of(float value) {
  std::uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

float float_of(std::uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

int g_rank = 0;
int g_failures = 0;

void fail(const std::string& where, const std::string& what) {
  ++g_failures;
  fmt::print(stderr, "mpi_amax_reduction_check: rank {}, {}: {}\n", g_rank, where, what);
}

// What `rank` casts into (meta, slot) at `step`: a function of those numbers only (mt19937's
// output is fixed by the standard), so any rank can compute any other rank's inputs. Empty
// now and then: that rank casts nothing there and its row 0 stays 0. Magnitudes from 2^-12 to
// 2^12, so E4M3 casts saturate sometimes and the scales keep moving.
std::vector<float> inputs(std::size_t config, int step, int rank, int ranks, std::size_t meta,
                          std::size_t slot) {
  std::mt19937 random(static_cast<std::uint32_t>(
      (((config * 131u + static_cast<std::size_t>(step)) * 131u + static_cast<std::size_t>(rank)) *
           131u + meta) * 131u + slot));
  const bool nan_here = step == kNanStep && rank == ranks - 1 && meta == 0 && slot == 0;
  const bool negative_nan_here = step == kNegativeNanStep && rank == 0 && meta == 2 && slot == 1;
  if (random() % 5 == 0 && !nan_here && !negative_nan_here) return {};
  const int exponent = static_cast<int>(random() % 25) - 12;
  std::vector<float> values(kElements);
  for (float& value : values) {
    const float fraction = static_cast<float>(random() >> 8) * 0x1p-24f;  // exact, in [0, 1)
    value = std::ldexp(fraction, exponent) * ((random() & 1u) != 0 ? -1.0f : 1.0f);
  }
  if (nan_here) values[5] = std::numeric_limits<float>::quiet_NaN();
  if (negative_nan_here) values[0] = float_of(kNegativeNanBits);
  return values;
}

std::vector<ScalingMeta> fresh_key() {
  std::vector<ScalingMeta> metas;
  for (const std::size_t slots : kSlotsPerMeta) {
    metas.push_back(ScalingMeta::fresh(kHistoryLength, slots));
  }
  return metas;
}

std::vector<ScalingMeta*> pointers(std::vector<ScalingMeta>& metas) {
  std::vector<ScalingMeta*> out;
  for (ScalingMeta& meta : metas) out.push_back(&meta);
  return out;
}

// `rank`'s casts of one step, each folding into row 0 with the meta's current scale.
void cast_step(std::vector<ScalingMeta>& metas, std::size_t config, int step, int rank,
               int ranks) {
  const Format format = kConfigs[config].recipe.format;
  std::vector<std::uint8_t> codes(kElements);
  for (std::size_t meta = 0; meta < metas.size(); ++meta) {
    for (std::size_t slot = 0; slot < metas[meta].slots(); ++slot) {
      const std::vector<float> x = inputs(config, step, rank, ranks, meta, slot);
      fp8sm::kernels::cast_to_fp8(x.data(), x.size(), metas[meta].scale[slot], format,
                                  codes.data(), metas[meta].amax(0, slot));
    }
  }
}

// Histories then scales of every meta, as bytes.
std::vector<unsigned char> state_bytes(const std::vector<ScalingMeta>& metas) {
  std::vector<unsigned char> bytes;
  auto append = [&bytes](const std::vector<float>& values) {
    const auto* begin = reinterpret_cast<const unsigned char*>(values.data());
    bytes.insert(bytes.end(), begin, begin + values.size() * sizeof(float));
  };
  for (const ScalingMeta& meta : metas) {
    append(meta.amax_history);
    append(meta.scale);
  }
  return bytes;
}

std::string hex(float value) { return fmt::format("0x{:08X}", bits_of(value)); }

// The single-process result: every rank's row 0 from the same starting state, folded together
// with the cast's accumulator, then one update.
void expected_step(std::vector<ScalingMeta>& expected, std::size_t config, int step, int ranks) {
  std::vector<float> maxes;
  for (int rank = 0; rank < ranks; ++rank) {
    std::vector<ScalingMeta> casted = expected;
    cast_step(casted, config, step, rank, ranks);
    const std::vector<float> current = fp8sm::kernels::current_amaxes(pointers(casted));
    if (rank == 0) {
      maxes = current;
    } else {
      for (std::size_t i = 0; i < maxes.size(); ++i) {
        maxes[i] = fp8sm::kernels::amax_fold(maxes[i], current[i]);
      }
    }
  }
  fp8sm::kernels::update_scales(pointers(expected), maxes, kConfigs[config].recipe);
}

void check_training(MpiGroup& world) {
  const int ranks = world.size();
  for (std::size_t config = 0; config < kConfigs.size(); ++config) {
    std::vector<ScalingMeta> metas = fresh_key();
    std::vector<ScalingMeta> expected = fresh_key();
    for (int step = 0; step < kSteps; ++step) {
      const std::string where = fmt::format("{}, step {}", kConfigs[config].name, step);
      cast_step(metas, config, step, world.rank(), ranks);
      fp8sm::runtime::reduce_and_update(pointers(metas), &world, true, kConfigs[config].recipe);
      expected_step(expected, config, step, ranks);

      const std::vector<unsigned char> mine = state_bytes(metas);
      if (mine != state_bytes(expected)) fail(where, "state differs from the single-process one");
      std::vector<unsigned char> all(world.rank() == 0 ? mine.size() * std::size_t(ranks) : 0);
      MPI_Gather(mine.data(), static_cast<int>(mine.size()), MPI_BYTE, all.data(),
                 static_cast<int>(mine.size()), MPI_BYTE, 0, MPI_COMM_WORLD);
      for (int other = 1; world.rank() == 0 && other < ranks; ++other) {
        if (std::memcmp(all.data() + mine.size() * std::size_t(other), mine.data(),
                        mine.size()) != 0) {
          fail(where, fmt::format("rank {}'s state differs from rank 0's", other));
        }
      }

      const float newest_nan = metas[0].amax(kHistoryLength - 1, 0);
      if (step == kNanStep && !std::isnan(newest_nan)) {
        fail(where, fmt::format("the last rank's NaN amax is not the newest history entry: {}", hex(newest_nan)));
      }
      const float newest_negative_nan = metas[2].amax(kHistoryLength - 1, 1);
      if (step == kNegativeNanStep && bits_of(newest_negative_nan) != 0x7FC00123u) {
        fail(where, fmt::format("rank 0's NaN amax (its cast cleared the sign) is not the newest history entry with "
                                "its payload: {}",
                                hex(newest_negative_nan)));
      }
    }
  }
}

// The reduction's order (amax_order.hpp) on values a cast never produces, worked by hand.
void check_order(MpiGroup& world) {
  const float nan = float_of(0x7FC00000u);
  const std::vector<float> rank0 = {-0.0f, -0.0f, float_of(0xFFC00000u), 1.0f,
                                    std::numeric_limits<float>::infinity(),
                                    float_of(0x7FC00001u), 2.0f, -1.0f};
  const std::vector<float> others = {-0.0f, 0.0f, 0.5f, nan, 3.0f, float_of(0x7FC00002u), 1.5f,
                                     -2.0f};
  const std::vector<float> expected = {-0.0f, 0.0f, nan, nan,
                                       std::numeric_limits<float>::infinity(),
                                       float_of(0x7FC00002u), 2.0f, -1.0f};
  std::vector<float> amaxes = world.rank() == 0 ? rank0 : others;
  world.all_reduce_max(amaxes);
  for (std::size_t i = 0; i < expected.size(); ++i) {
    if (bits_of(amaxes[i]) != bits_of(expected[i])) {
      fail("order", fmt::format("entry {} reduced to {}, expected {}", i, hex(amaxes[i]), hex(expected[i])));
    }
  }
}

// Ranks that disagree on the key's size: every rank gets the error, none waits for ever.
void check_count_mismatch(MpiGroup& world) {
  std::vector<float> amaxes(world.rank() == 0 ? 3 : 4, 1.0f);
  try {
    world.all_reduce_max(amaxes);
    fail("count mismatch", "no error");
  } catch (const std::runtime_error& error) {
    if (std::string(error.what()).find("different numbers") == std::string::npos) {
      fail("count mismatch", fmt::format("unexpected message: {}", error.what()));
    }
  }
}

// A group of one (each rank on its own, another key): no reduction, this rank's amaxes only.
void check_group_of_one() {
  MPI_Comm alone = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, g_rank, 0, &alone);
  {
    MpiGroup group(alone, fmt::format("rank {} alone", g_rank));
    std::vector<ScalingMeta> metas = fresh_key();
    std::vector<ScalingMeta> expected = fresh_key();
    cast_step(metas, 0, 0, g_rank, 2);
    cast_step(expected, 0, 0, g_rank, 2);
    fp8sm::runtime::reduce_and_update(pointers(metas), &group, true, kConfigs[0].recipe);
    fp8sm::kernels::update_scales(pointers(expected),
                                  fp8sm::kernels::current_amaxes(pointers(expected)),
                                  kConfigs[0].recipe);
    if (group.size() != 1) fail("group of one", fmt::format("size {}", group.size()));
    if (state_bytes(metas) != state_bytes(expected)) fail("group of one", "state differs");
  }
  MPI_Comm_free(&alone);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    MpiGroup too_early;
    fail("before MPI_Init", "MpiGroup was constructed");
  } catch (const std::runtime_error& error) {
    if (std::string(error.what()).find("not initialised") == std::string::npos) {
      fail("before MPI_Init", fmt::format("unexpected message: {}", error.what()));
    }
  }
  MPI_Init(&argc, &argv);
  int ranks = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  if (ranks < 2) {
    if (g_rank == 0) {
      fmt::print(stderr, "mpi_amax_reduction_check: needs >= 2 ranks (mpirun -np 2)\n");
    }
    MPI_Finalize();
    return 2;
  }
  try {
    MpiGroup world;
    if (world.size() != ranks || world.rank() != g_rank) {
      fail("MpiGroup", fmt::format("size/rank {}/{} instead of MPI_COMM_WORLD's", world.size(), world.rank()));
    }
    check_training(world);
    check_order(world);
    check_count_mismatch(world);
    check_group_of_one();
  } catch (const std::exception& error) {
    // The other ranks may be waiting in a collective: end them all.
    fmt::print(stderr, "mpi_amax_reduction_check: rank {}: {}\n", g_rank, error.what());
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  int failures = 0;
  MPI_Allreduce(&g_failures, &failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (g_rank == 0) {
    fmt::print("mpi_amax_reduction_check: {} ranks, {} recipes x {} steps: {}\n", ranks, kConfigs.size(), kSteps,
               failures == 0 ? "all ranks agree with one process" : "FAILED");
  }
  MPI_Finalize();
  return failures == 0 ? 0 : 1;
}
