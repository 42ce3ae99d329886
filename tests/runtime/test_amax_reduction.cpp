// The amax reduction of spec §6 step 2: the order its maximum is taken in (amax_order.hpp),
// the single-process group, and reduce_and_update over a simulated group of several ranks.
// Expected values come from hand-worked constants and from kernels::amax_fold (the cast's
// accumulator, a separate implementation of the same order on non-negative amaxes) plus
// kernels::update_scales, never from the code under test.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "kernels/amax.hpp"
#include "kernels/scale_update.hpp"
#include "kernels/scaling_meta.hpp"
#include "runtime/amax_order.hpp"
#include "runtime/amax_reduction.hpp"

namespace fp8sm::runtime {
namespace {

using kernels::AmaxComputeAlgo;
using kernels::Format;
using kernels::ScaleUpdateRecipe;
using kernels::ScalingMeta;
using kernels::UpdatePath;

constexpr float kInf = std::numeric_limits<float>::infinity();

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

const float kQuietNan = float_of(0x7FC00000u);
const float kNegativeNan = float_of(0xFFC00000u);

::testing::AssertionResult same_bits(const std::vector<float>& got,
                                     const std::vector<float>& expected) {
  if (got.size() == expected.size() &&
      (got.empty() || std::memcmp(got.data(), expected.data(), got.size() * sizeof(float)) == 0)) {
    return ::testing::AssertionSuccess();
  }
  auto print = [](const std::vector<float>& v) {
    std::vector<std::string> values;
    for (const float x : v) values.push_back(fmt::format("{} ({:08X})", x, bits_of(x)));
    return fmt::format("[{}]", fmt::join(values, ", "));
  };
  return ::testing::AssertionFailure() << print(got) << ", expected " << print(expected);
}

// ----- the order -----

TEST(AmaxOrder, PositiveFloatsAreTheirOwnBitPatterns) {
  EXPECT_EQ(amax_order_key(0.0f), 0);
  EXPECT_EQ(amax_order_key(float_of(1u)), 1);  // the smallest subnormal
  EXPECT_EQ(amax_order_key(1.0f), 0x3F800000);
  EXPECT_EQ(amax_order_key(kInf), 0x7F800000);
}

TEST(AmaxOrder, NanOfEitherSignWinsOverInfinity) {
  EXPECT_GT(amax_order_key(kQuietNan), amax_order_key(kInf));
  EXPECT_EQ(amax_order_key(kNegativeNan), 0x7FC00000);  // its magnitude, as amax_fold makes it
  EXPECT_EQ(bits_of(amax_order_max(kInf, kQuietNan)), 0x7FC00000u);
  EXPECT_EQ(bits_of(amax_order_max(kNegativeNan, 3.0f)), 0x7FC00000u);  // sign cleared
  EXPECT_EQ(bits_of(amax_order_max(0.0f, float_of(0xFF800001u))), 0x7F800001u);
  // Between NaNs the larger payload, as in amax_fold.
  EXPECT_EQ(bits_of(amax_order_max(float_of(0x7FC00002u), float_of(0x7FC00001u))), 0x7FC00002u);
}

TEST(AmaxOrder, NegativeZeroIsJustBelowPositiveZero) {
  EXPECT_EQ(amax_order_key(-0.0f), -1);
  EXPECT_EQ(bits_of(amax_order_max(-0.0f, 0.0f)), 0x00000000u);
  EXPECT_EQ(bits_of(amax_order_max(0.0f, -0.0f)), 0x00000000u);
  EXPECT_EQ(bits_of(amax_order_max(-0.0f, -0.0f)), 0x80000000u);  // all agree: unchanged
}

TEST(AmaxOrder, NegativeFloatsInNumericOrder) {
  EXPECT_EQ(amax_order_max(-1.0f, -2.0f), -1.0f);
  EXPECT_EQ(amax_order_max(-2.0f, -1.0f), -1.0f);
  EXPECT_EQ(bits_of(amax_order_max(-kInf, -0.0f)), 0x80000000u);
  EXPECT_EQ(amax_order_max(-1.0f, float_of(1u)), float_of(1u));
  EXPECT_LT(amax_order_key(-kInf), amax_order_key(-std::numeric_limits<float>::max()));
}

TEST(AmaxOrder, DecodingGivesTheFloatBack) {
  for (const float x : {0.0f, -0.0f, 1.0f, -1.0f, float_of(1u), float_of(0x80000001u), kInf,
                        -kInf, std::numeric_limits<float>::max(), kQuietNan,
                        float_of(0x7F800001u), float_of(0x7FFFFFFFu)}) {
    EXPECT_EQ(bits_of(amax_from_order_key(amax_order_key(x))), bits_of(x)) << x;
  }
  EXPECT_EQ(bits_of(amax_from_order_key(amax_order_key(kNegativeNan))), 0x7FC00000u);
}

TEST(AmaxOrder, KeysNoFloatMapsToAreRejected) {
  EXPECT_THROW(amax_from_order_key(std::numeric_limits<std::int32_t>::min()),
               std::invalid_argument);
  EXPECT_THROW(amax_from_order_key(amax_order_key(-kInf) - 1), std::invalid_argument);
}

// On what casts put in row 0 (+0, positive floats, +inf, positive NaNs) the reduction's max
// is the cast's accumulator's: reducing per-rank amaxes equals folding every rank's data.
TEST(AmaxOrder, AgreesWithTheCastsAccumulatorOnNonNegativeAmaxes) {
  std::mt19937 random(20240611u);
  std::vector<std::uint32_t> patterns = {0u, 1u, 0x3F800000u, 0x7F7FFFFFu, 0x7F800000u,
                                         0x7F800001u, 0x7FC00000u, 0x7FFFFFFFu};
  for (int i = 0; i < 2000; ++i) patterns.push_back(random() & 0x7FFFFFFFu);
  for (std::size_t i = 0; i + 1 < patterns.size(); ++i) {
    const float a = float_of(patterns[i]);
    const float b = float_of(patterns[i + 1]);
    ASSERT_EQ(bits_of(amax_order_max(a, b)), bits_of(kernels::amax_fold(a, b)))
        << std::hex << patterns[i] << " " << patterns[i + 1];
    ASSERT_EQ(bits_of(amax_order_max(b, a)), bits_of(kernels::amax_fold(b, a)));
  }
}

// ----- the groups -----

TEST(SingleProcessGroup, IsOneRankAndLeavesTheAmaxesAlone) {
  SingleProcessGroup group;
  EXPECT_EQ(group.size(), 1);
  EXPECT_EQ(group.rank(), 0);
  const std::vector<float> before = {0.0f, -0.0f, 3.5f, kInf, kQuietNan, kNegativeNan};
  std::vector<float> amaxes = before;
  group.all_reduce_max(amaxes);
  EXPECT_TRUE(same_bits(amaxes, before));
  EXPECT_FALSE(group.name().empty());
}

// This process is rank 0 of a simulated group; the other ranks' amaxes are given up front.
class LoopbackGroup final : public AmaxReductionGroup {
 public:
  explicit LoopbackGroup(std::vector<std::vector<float>> other_ranks)
      : other_ranks_(std::move(other_ranks)) {}

  int size() const override { return static_cast<int>(other_ranks_.size()) + 1; }
  int rank() const override { return 0; }
  void all_reduce_max(std::vector<float>& amaxes) override {
    ++calls;
    for (const std::vector<float>& other : other_ranks_) {
      ASSERT_EQ(other.size(), amaxes.size()) << "the test's other ranks have the wrong length";
      for (std::size_t i = 0; i < amaxes.size(); ++i) {
        amaxes[i] = amax_order_max(amaxes[i], other[i]);
      }
    }
  }
  std::string name() const override { return fmt::format("loopback of {}", size()); }

  int calls = 0;

 private:
  std::vector<std::vector<float>> other_ranks_;
};

// A group that returns one amax too many (or too few): a broken implementation.
class ResizingGroup final : public AmaxReductionGroup {
 public:
  explicit ResizingGroup(bool grow) : grow_(grow) {}
  int size() const override { return 2; }
  int rank() const override { return 0; }
  void all_reduce_max(std::vector<float>& amaxes) override {
    if (grow_) {
      amaxes.push_back(1.0f);
    } else {
      amaxes.pop_back();
    }
  }
  std::string name() const override { return "broken-resizing-group"; }

 private:
  bool grow_;
};

// ----- reduce_and_update -----

// One registry key: three metas (2, 1 and 3 slots), history length 4, with an older history
// and row 0 set to `current` (6 values).
std::vector<ScalingMeta> key_with(const std::vector<float>& current) {
  std::vector<ScalingMeta> metas = {ScalingMeta::fresh(4, 2), ScalingMeta::fresh(4, 1),
                                    ScalingMeta::fresh(4, 3)};
  float older = 0.5f;
  std::size_t next = 0;
  for (ScalingMeta& meta : metas) {
    for (std::size_t slot = 0; slot < meta.slots(); ++slot) {
      meta.amax(0, slot) = current.at(next++);
      for (std::size_t row = 1; row < meta.history_length; ++row) {
        meta.amax(row, slot) = older;
        older *= 1.75f;
      }
      meta.scale[slot] = 2.0f;
    }
  }
  return metas;
}

std::vector<ScalingMeta*> pointers(std::vector<ScalingMeta>& metas) {
  std::vector<ScalingMeta*> out;
  for (ScalingMeta& meta : metas) out.push_back(&meta);
  return out;
}

// Histories and scales of every meta, bit for bit.
void expect_same_state(const std::vector<ScalingMeta>& got,
                       const std::vector<ScalingMeta>& expected) {
  ASSERT_EQ(got.size(), expected.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_TRUE(same_bits(got[i].amax_history, expected[i].amax_history)) << "meta " << i;
    EXPECT_TRUE(same_bits(got[i].scale, expected[i].scale)) << "meta " << i;
  }
}

const std::vector<ScaleUpdateRecipe> kRecipes = {
    {Format::E4M3, 0, AmaxComputeAlgo::Max, UpdatePath::Fused},
    {Format::E5M2, 1, AmaxComputeAlgo::Max, UpdatePath::Fused},
    {Format::E4M3, 0, AmaxComputeAlgo::MostRecent, UpdatePath::Fused},
    {Format::E4M3, 0, AmaxComputeAlgo::Max, UpdatePath::Unfused},
    {Format::E5M2, 2, AmaxComputeAlgo::MostRecent, UpdatePath::Unfused},
};

// Slot by slot: 0 on every rank (fused: no roll), larger elsewhere, NaN on one other rank,
// +inf, a subnormal, 0 here only.
const std::vector<float> kThisRank = {0.0f, 3.0f, 1.0f, 7.0f, float_of(1u), 0.0f};
const std::vector<std::vector<float>> kOtherRanks = {
    {0.0f, 9.0f, 0.5f, 1.0f, 0.0f, 2.5f},
    {0.0f, 4.0f, kQuietNan, kInf, float_of(3u), 0.25f},
};

TEST(ReduceAndUpdate, UpdatesFromTheElementWiseMaxOfEveryRank) {
  // Independently: every rank's row 0 folded with the cast's accumulator.
  std::vector<float> maxes = kThisRank;
  for (const std::vector<float>& other : kOtherRanks) {
    for (std::size_t i = 0; i < maxes.size(); ++i) {
      maxes[i] = kernels::amax_fold(maxes[i], other[i]);
    }
  }
  for (const ScaleUpdateRecipe& recipe : kRecipes) {
    SCOPED_TRACE(fmt::format("recipe path {} algo {}", static_cast<int>(recipe.path), static_cast<int>(recipe.algo)));
    std::vector<ScalingMeta> expected = key_with(kThisRank);
    kernels::update_scales(pointers(expected), maxes, recipe);

    std::vector<ScalingMeta> metas = key_with(kThisRank);
    LoopbackGroup group(kOtherRanks);
    reduce_and_update(pointers(metas), &group, true, recipe);
    EXPECT_EQ(group.calls, 1);
    expect_same_state(metas, expected);
  }
}

// Worked by hand: one slot, L = 3, history [8 (this rank's current), 2, 4], another rank NaN.
// Fused max: last = NaN, amax = fmaxf(NaN, 2, 4) = 4, scale 448 / 4 = 112, history [0, 4, NaN].
// Without the reduction: last = 8, scale 448 / 8 = 56, history [0, 4, 8].
TEST(ReduceAndUpdate, NanOnAnotherRankWins) {
  const ScaleUpdateRecipe fused{Format::E4M3, 0, AmaxComputeAlgo::Max, UpdatePath::Fused};
  ScalingMeta meta = ScalingMeta::fresh(3, 1);
  meta.amax_history = {8.0f, 2.0f, 4.0f};
  ScalingMeta alone = meta;

  LoopbackGroup group(std::vector<std::vector<float>>{{kQuietNan}});
  reduce_and_update({&meta}, &group, true, fused);
  EXPECT_TRUE(same_bits(meta.amax_history, {0.0f, 4.0f, kQuietNan}));
  EXPECT_EQ(meta.scale[0], 112.0f);

  reduce_and_update({&alone}, &group, false, fused);
  EXPECT_TRUE(same_bits(alone.amax_history, {0.0f, 4.0f, 8.0f}));
  EXPECT_EQ(alone.scale[0], 56.0f);
}

// Reduce_amax false, no group, or a group of one: the update sees this rank's amaxes only.
TEST(ReduceAndUpdate, DoesNotReduceUnlessAskedAndDistributed) {
  for (const ScaleUpdateRecipe& recipe : kRecipes) {
    std::vector<ScalingMeta> expected = key_with(kThisRank);
    kernels::update_scales(pointers(expected), kThisRank, recipe);

    std::vector<ScalingMeta> not_asked = key_with(kThisRank);
    LoopbackGroup three(kOtherRanks);
    reduce_and_update(pointers(not_asked), &three, false, recipe);
    EXPECT_EQ(three.calls, 0);
    expect_same_state(not_asked, expected);

    std::vector<ScalingMeta> one_rank = key_with(kThisRank);
    LoopbackGroup one(std::vector<std::vector<float>>{});
    ASSERT_EQ(one.size(), 1);
    reduce_and_update(pointers(one_rank), &one, true, recipe);
    EXPECT_EQ(one.calls, 0);
    expect_same_state(one_rank, expected);

    std::vector<ScalingMeta> no_group = key_with(kThisRank);
    reduce_and_update(pointers(no_group), nullptr, true, recipe);
    expect_same_state(no_group, expected);

    std::vector<ScalingMeta> single = key_with(kThisRank);
    SingleProcessGroup single_process;
    reduce_and_update(pointers(single), &single_process, true, recipe);
    expect_same_state(single, expected);
  }
}

TEST(ReduceAndUpdate, GroupThatChangesTheLengthIsALogicError) {
  const ScaleUpdateRecipe fused{};
  for (const bool grow : {true, false}) {
    std::vector<ScalingMeta> metas = key_with(kThisRank);
    const std::vector<ScalingMeta> before = metas;
    ResizingGroup group(grow);
    try {
      reduce_and_update(pointers(metas), &group, true, fused);
      ADD_FAILURE() << "no exception";
    } catch (const std::logic_error& error) {
      EXPECT_NE(std::string(error.what()).find("broken-resizing-group"), std::string::npos)
          << error.what();
    }
    expect_same_state(metas, before);
  }
}

// A bad key is refused by step 1, before anything is reduced.
TEST(ReduceAndUpdate, BadMetaIsRefusedBeforeReducing) {
  std::vector<ScalingMeta> metas = key_with(kThisRank);
  std::vector<ScalingMeta*> key = pointers(metas);
  key.push_back(nullptr);
  LoopbackGroup group(kOtherRanks);
  EXPECT_THROW(reduce_and_update(key, &group, true, ScaleUpdateRecipe{}), std::invalid_argument);
  EXPECT_EQ(group.calls, 0);
}

}  // namespace
}  // namespace fp8sm::runtime
