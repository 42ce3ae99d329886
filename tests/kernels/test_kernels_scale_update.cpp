// The amax-history/scale update of spec §6, steps 3 (fused) and 4 (unfused), edge case by edge
// case. Expected scales are 448 (E4M3) or 57344 (E5M2) over the amax the spec's rules pick,
// worked out by hand in the comments.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/scale_update.hpp"

namespace fp8sm::kernels {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
const float kNan = std::numeric_limits<float>::quiet_NaN();

const ScaleUpdateRecipe kFusedMax{Format::E4M3, 0, AmaxComputeAlgo::Max, UpdatePath::Fused};
const ScaleUpdateRecipe kUnfusedMax{Format::E4M3, 0, AmaxComputeAlgo::Max, UpdatePath::Unfused};
const ScaleUpdateRecipe kFusedRecent{Format::E4M3, 0, AmaxComputeAlgo::MostRecent,
                                     UpdatePath::Fused};
const ScaleUpdateRecipe kUnfusedRecent{Format::E4M3, 0, AmaxComputeAlgo::MostRecent,
                                       UpdatePath::Unfused};

// One quantizer slot: `history` is its column h[0..L-1].
ScalingMeta one_slot(std::vector<float> history, float scale) {
  ScalingMeta meta;
  meta.history_length = history.size();
  meta.amax_history = std::move(history);
  meta.scale = {scale};
  return meta;
}

void update(ScalingMeta& meta, float reduced, const ScaleUpdateRecipe& recipe) {
  update_scales({&meta}, {reduced}, recipe);
}

// Equal entry by entry, NaN matching NaN.
::testing::AssertionResult same_history(const std::vector<float>& got,
                                        const std::vector<float>& expected) {
  bool same = got.size() == expected.size();
  for (std::size_t i = 0; same && i < got.size(); ++i) {
    same = std::isnan(expected[i]) ? std::isnan(got[i]) : got[i] == expected[i];
  }
  if (same) return ::testing::AssertionSuccess();
  auto print = [](const std::vector<float>& v) { return fmt::format("[{}]", fmt::join(v, ", ")); };
  return ::testing::AssertionFailure() << "history " << print(got) << ", expected "
                                       << print(expected);
}

TEST(ScalingMeta, FreshStateIsZeroHistoryAndUnitScale) {
  const ScalingMeta meta = ScalingMeta::fresh(3, 2);
  EXPECT_EQ(meta.history_length, 3u);
  EXPECT_EQ(meta.amax_history, std::vector<float>(6, 0.0f));
  EXPECT_EQ(meta.scale, (std::vector<float>{1.0f, 1.0f}));
  EXPECT_THROW(ScalingMeta::fresh(0, 1), std::invalid_argument);
}

TEST(ScaleUpdate, CurrentAmaxesConcatenatesRowZeroInOrder) {
  ScalingMeta first = ScalingMeta::fresh(2, 2);
  ScalingMeta second = ScalingMeta::fresh(3, 1);
  first.amax(0, 0) = 1.0f;
  first.amax(0, 1) = 2.0f;
  first.amax(1, 0) = 9.0f;  // not the current row
  second.amax(0, 0) = 3.0f;
  EXPECT_EQ(current_amaxes({&first, &second}), (std::vector<float>{1.0f, 2.0f, 3.0f}));
}

TEST(ScaleUpdate, BothPathsRollAndTakeTheMaxOfTheLastLAmaxes) {
  // h = [_, 8, 2], r = 4: the window {8, 2, 4} has max 8 -> 448 / 8 = 56; the oldest (8)
  // then drops out: [0, 2, 4].
  for (const auto& recipe : {kFusedMax, kUnfusedMax}) {
    ScalingMeta meta = one_slot({0, 8, 2}, 1.0f);
    update(meta, 4.0f, recipe);
    EXPECT_EQ(meta.scale[0], 56.0f);
    EXPECT_TRUE(same_history(meta.amax_history, {0, 2, 4}));
  }
}

TEST(ScaleUpdate, MostRecentTakesTheNewAmaxOnly) {
  // h = [0, 100, 100], r = 4 -> 448 / 4 = 112 on both paths; history rolls as for max.
  for (const auto& recipe : {kFusedRecent, kUnfusedRecent}) {
    ScalingMeta meta = one_slot({0, 100, 100}, 1.0f);
    update(meta, 4.0f, recipe);
    EXPECT_EQ(meta.scale[0], 112.0f);
    EXPECT_TRUE(same_history(meta.amax_history, {0, 100, 4}));
  }
}

TEST(ScaleUpdate, ReducedAmaxReplacesTheLocalCurrentSlot) {
  // r != 0: r is the new amax whatever row 0 holds (fused: last := r; unfused: h[0] := r).
  for (const auto& recipe : {kFusedMax, kUnfusedMax}) {
    ScalingMeta meta = one_slot({3, 0, 0}, 1.0f);
    update(meta, 5.0f, recipe);
    EXPECT_EQ(meta.scale[0], 448.0f / 5.0f);
    EXPECT_TRUE(same_history(meta.amax_history, {0, 0, 5}));
  }
  // Fused, r == 0 but row 0 non-zero: last := h[0].
  ScalingMeta meta = one_slot({3, 0, 0}, 1.0f);
  update(meta, 0.0f, kFusedMax);
  EXPECT_EQ(meta.scale[0], 448.0f / 3.0f);
  EXPECT_TRUE(same_history(meta.amax_history, {0, 0, 3}));
}

TEST(ScaleUpdate, CurrentZeroWithOlderHistoryFusedKeepsEverythingUnfusedRolls) {
  // Fused: last = 0 -> no roll, amax 0 -> scale kept.
  ScalingMeta fused = one_slot({0, 5, 7}, 2.0f);
  update(fused, 0.0f, kFusedMax);
  EXPECT_EQ(fused.scale[0], 2.0f);
  EXPECT_TRUE(same_history(fused.amax_history, {0, 5, 7}));
  // Unfused: window {0, 5, 7} -> 448 / 7 = 64; roll anyway: [0, 7, 0].
  ScalingMeta unfused = one_slot({0, 5, 7}, 2.0f);
  update(unfused, 0.0f, kUnfusedMax);
  EXPECT_EQ(unfused.scale[0], 64.0f);
  EXPECT_TRUE(same_history(unfused.amax_history, {0, 7, 0}));
  // Unfused most_recent: amax = h[0] = 0 -> scale kept, but the history still rolls.
  ScalingMeta recent = one_slot({0, 5, 7}, 2.0f);
  update(recent, 0.0f, kUnfusedRecent);
  EXPECT_EQ(recent.scale[0], 2.0f);
  EXPECT_TRUE(same_history(recent.amax_history, {0, 7, 0}));
}

TEST(ScaleUpdate, AllZeroAmaxKeepsTheScaleOnEveryPath) {
  for (const auto& recipe : {kFusedMax, kUnfusedMax, kFusedRecent, kUnfusedRecent}) {
    ScalingMeta meta = one_slot({0, 0, 0}, 2.0f);
    update(meta, 0.0f, recipe);
    EXPECT_EQ(meta.scale[0], 2.0f);
    EXPECT_TRUE(same_history(meta.amax_history, {0, 0, 0}));
  }
}

TEST(ScaleUpdate, InfiniteAmaxKeepsTheScale) {
  for (const auto& recipe : {kFusedMax, kUnfusedMax, kFusedRecent, kUnfusedRecent}) {
    ScalingMeta meta = one_slot({0, 1, 2}, 2.0f);
    update(meta, kInf, recipe);
    EXPECT_EQ(meta.scale[0], 2.0f);
    EXPECT_TRUE(same_history(meta.amax_history, {0, 2, kInf}));
  }
  // While inf is in the window, max keeps the scale: {1, 2, inf}.
  ScalingMeta meta = one_slot({0, 2, kInf}, 2.0f);
  update(meta, 1.0f, kFusedMax);
  EXPECT_EQ(meta.scale[0], 2.0f);
}

TEST(ScaleUpdate, FusedMaxIgnoresNanButStoresIt) {
  ScalingMeta meta = one_slot({0, 2, 4}, 1.5f);
  update(meta, kNan, kFusedMax);  // fmaxf{NaN, 2, 4} = 4 -> 112
  EXPECT_EQ(meta.scale[0], 112.0f);
  EXPECT_TRUE(same_history(meta.amax_history, {0, 4, kNan}));
  update(meta, 8.0f, kFusedMax);  // {8, 4, NaN} -> 8 -> 56
  EXPECT_EQ(meta.scale[0], 56.0f);
  EXPECT_TRUE(same_history(meta.amax_history, {0, kNan, 8}));
  update(meta, 1.0f, kFusedMax);  // {1, NaN, 8} -> 8 -> 56
  EXPECT_EQ(meta.scale[0], 56.0f);
  EXPECT_TRUE(same_history(meta.amax_history, {0, 8, 1}));
  // With nothing else in the window the amax is 0 and the scale is kept.
  ScalingMeta empty = one_slot({0, 0, 0}, 1.5f);
  update(empty, kNan, kFusedMax);
  EXPECT_EQ(empty.scale[0], 1.5f);
  EXPECT_TRUE(same_history(empty.amax_history, {0, 0, kNan}));
}

TEST(ScaleUpdate, UnfusedMaxKeepsTheScaleWhileNanIsInTheWindow) {
  ScalingMeta meta = one_slot({0, 2, 4}, 1.5f);
  update(meta, kNan, kUnfusedMax);  // {NaN, 2, 4} -> NaN: keep
  EXPECT_EQ(meta.scale[0], 1.5f);
  EXPECT_TRUE(same_history(meta.amax_history, {0, 4, kNan}));
  update(meta, 8.0f, kUnfusedMax);  // {8, 4, NaN}: keep
  EXPECT_EQ(meta.scale[0], 1.5f);
  EXPECT_TRUE(same_history(meta.amax_history, {0, kNan, 8}));
  update(meta, 1.0f, kUnfusedMax);  // {1, NaN, 8}: keep
  EXPECT_EQ(meta.scale[0], 1.5f);
  EXPECT_TRUE(same_history(meta.amax_history, {0, 8, 1}));
  update(meta, 1.0f, kUnfusedMax);  // {1, 8, 1} -> 56: the NaN has left the window
  EXPECT_EQ(meta.scale[0], 56.0f);
  EXPECT_TRUE(same_history(meta.amax_history, {0, 1, 1}));
}

TEST(ScaleUpdate, MostRecentNanKeepsTheScaleOnBothPaths) {
  for (const auto& recipe : {kFusedRecent, kUnfusedRecent}) {
    ScalingMeta meta = one_slot({0, 2, 4}, 1.5f);
    update(meta, kNan, recipe);
    EXPECT_EQ(meta.scale[0], 1.5f);
    EXPECT_TRUE(same_history(meta.amax_history, {0, 4, kNan}));
  }
}

TEST(ScaleUpdate, TinyAmaxGivesFltMax) {
  // 448 / 1e-38 = 4.48e40 and 448 / 2^-149 overflow float32: FLT_MAX instead of inf.
  ASSERT_GT(448.0 / 1.0e-38, static_cast<double>(FLT_MAX));
  for (const float tiny : {1.0e-38f, std::numeric_limits<float>::denorm_min()}) {
    for (const auto& recipe : {kFusedMax, kUnfusedMax, kFusedRecent, kUnfusedRecent}) {
      ScalingMeta meta = one_slot({0, 0}, 1.0f);
      update(meta, tiny, recipe);
      EXPECT_EQ(meta.scale[0], FLT_MAX) << tiny;
    }
  }
}

TEST(ScaleUpdate, MarginFusedOrderStaysFiniteWhereUnfusedOverflows) {
  // Spec §6: amax 1e-36, margin 1. Fused: (448 * 2^-1) / 1e-36 = 2.24e38 < FLT_MAX.
  // Unfused: 448 / 1e-36 = 4.48e38 overflows to inf before the division by 2: FLT_MAX.
  ScaleUpdateRecipe fused = kFusedMax;
  ScaleUpdateRecipe unfused = kUnfusedMax;
  fused.margin = unfused.margin = 1;
  ScalingMeta a = one_slot({0, 0}, 1.0f);
  update(a, 1.0e-36f, fused);
  const float expected = (448.0f * 0.5f) / 1.0e-36f;
  EXPECT_EQ(a.scale[0], expected);
  EXPECT_TRUE(std::isfinite(a.scale[0]));
  EXPECT_LT(a.scale[0], FLT_MAX);
  EXPECT_NEAR(a.scale[0] / 2.24e38f, 1.0f, 1.0e-6f);
  ScalingMeta b = one_slot({0, 0}, 1.0f);
  update(b, 1.0e-36f, unfused);
  EXPECT_EQ(b.scale[0], FLT_MAX);
}

TEST(ScaleUpdate, MarginDividesTheScaleByTwoToTheMargin) {
  // Both orders: (448 / 4) / 7 = 16 and (448 / 7) / 4 = 16, exactly.
  for (ScaleUpdateRecipe recipe : {kFusedMax, kUnfusedMax}) {
    recipe.margin = 2;
    ScalingMeta meta = one_slot({0, 0}, 1.0f);
    update(meta, 7.0f, recipe);
    EXPECT_EQ(meta.scale[0], 16.0f);
  }
}

TEST(ScaleUpdate, HistoryLengthOne) {
  for (const auto& recipe : {kFusedMax, kUnfusedMax, kFusedRecent, kUnfusedRecent}) {
    ScalingMeta meta = one_slot({0}, 1.0f);
    update(meta, 5.0f, recipe);  // the window is {5}
    EXPECT_EQ(meta.scale[0], 448.0f / 5.0f);
    EXPECT_TRUE(same_history(meta.amax_history, {0}));
    update(meta, 0.0f, recipe);  // amax 0: kept
    EXPECT_EQ(meta.scale[0], 448.0f / 5.0f);
    EXPECT_TRUE(same_history(meta.amax_history, {0}));
    update(meta, kNan, recipe);  // {NaN}: every rule keeps the scale
    EXPECT_EQ(meta.scale[0], 448.0f / 5.0f);
    EXPECT_TRUE(same_history(meta.amax_history, {0}));
  }
}

TEST(ScaleUpdate, HistoryRollsNewestLastOverSeveralUpdates) {
  for (const auto& recipe : {kFusedMax, kUnfusedMax}) {
    // L = 3, amaxes 8, 4, 2, 1, 1: the window is the last three amaxes.
    ScalingMeta meta = ScalingMeta::fresh(3, 1);
    const std::vector<float> amaxes = {8, 4, 2, 1, 1};
    const std::vector<float> scales = {56, 56, 56, 112, 224};  // 448 / {8, 8, 8, 4, 2}
    const std::vector<std::vector<float>> histories = {
        {0, 0, 8}, {0, 8, 4}, {0, 4, 2}, {0, 2, 1}, {0, 1, 1}};
    for (std::size_t step = 0; step < amaxes.size(); ++step) {
      update(meta, amaxes[step], recipe);
      EXPECT_EQ(meta.scale[0], scales[step]) << "step " << step;
      EXPECT_TRUE(same_history(meta.amax_history, histories[step])) << "step " << step;
    }
    // L = 4, increasing: rows 1..3 hold the three latest, oldest first.
    ScalingMeta four = ScalingMeta::fresh(4, 1);
    for (const float amax : {1.0f, 2.0f, 3.0f, 4.0f}) update(four, amax, recipe);
    EXPECT_TRUE(same_history(four.amax_history, {0, 2, 3, 4}));
  }
}

TEST(ScaleUpdate, EachDirectionUsesItsFormatsMaximum) {
  // HYBRID: forward E4M3 (448), backward E5M2 (57344). amax 2 -> 224 and 28672.
  for (const UpdatePath path : {UpdatePath::Fused, UpdatePath::Unfused}) {
    ScalingMeta forward = one_slot({0, 0}, 1.0f);
    ScalingMeta backward = one_slot({0, 0}, 1.0f);
    update_scales({&forward}, {2.0f}, {Format::E4M3, 0, AmaxComputeAlgo::Max, path});
    update_scales({&backward}, {2.0f}, {Format::E5M2, 0, AmaxComputeAlgo::Max, path});
    EXPECT_EQ(forward.scale[0], 224.0f);
    EXPECT_EQ(backward.scale[0], 28672.0f);
  }
}

TEST(ScaleUpdate, UpdatesEverySlotOfEveryMetaOfTheKey) {
  // first: L = 2, two slots; second: L = 2, one slot. Rows are row-major over slots.
  ScalingMeta first = ScalingMeta::fresh(2, 2);
  first.amax_history = {1, 0,   // row 0 (current): slot 0 saw 1, slot 1 nothing
                        0, 3};  // row 1
  ScalingMeta second = ScalingMeta::fresh(2, 1);
  second.amax_history = {4, 0};
  // The all-reduce raised slot 0 to 2. Slot 0: window {2, 0} -> 224; slot 1: r = 0 and
  // h[0] = 0 -> untouched; second: {4, 0} -> 112.
  update_scales({&first, &second}, {2, 0, 4}, kFusedMax);
  EXPECT_EQ(first.scale, (std::vector<float>{224, 1}));
  EXPECT_EQ(first.amax_history, (std::vector<float>{0, 0, 2, 3}));
  EXPECT_EQ(second.scale, (std::vector<float>{112}));
  EXPECT_EQ(second.amax_history, (std::vector<float>{0, 4}));
}

void expect_rejected(const std::vector<ScalingMeta*>& metas, const std::vector<float>& reduced,
                     const ScaleUpdateRecipe& recipe, const std::string& message_part) {
  try {
    update_scales(metas, reduced, recipe);
    ADD_FAILURE() << "no exception, expected one mentioning '" << message_part << "'";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find(message_part), std::string::npos) << error.what();
  }
}

TEST(ScaleUpdate, RejectsBadArgumentsBeforeChangingAnything) {
  ScalingMeta good = one_slot({0, 1}, 1.0f);
  const ScalingMeta before = good;
  ScaleUpdateRecipe negative_margin = kFusedMax;
  negative_margin.margin = -1;
  expect_rejected({&good}, {2.0f}, negative_margin, "margin");
  expect_rejected({&good}, {2.0f, 3.0f}, kFusedMax, "reduced");
  expect_rejected({&good, nullptr}, {2.0f}, kFusedMax, "null");
  expect_rejected({&good, &good}, {2.0f, 2.0f}, kFusedMax, "twice");

  ScalingMeta zero_length = one_slot({}, 1.0f);
  expect_rejected({&good, &zero_length}, {2.0f, 2.0f}, kUnfusedMax, "at least 1");
  ScalingMeta wrong_size = one_slot({0, 1, 2}, 1.0f);
  wrong_size.history_length = 2;
  expect_rejected({&good, &wrong_size}, {2.0f, 2.0f}, kUnfusedMax, "entries");

  ScaleUpdateRecipe bad_algo = kFusedMax;
  bad_algo.algo = static_cast<AmaxComputeAlgo>(7);
  expect_rejected({&good}, {2.0f}, bad_algo, "amax_compute_algo");
  ScaleUpdateRecipe bad_path = kFusedMax;
  bad_path.path = static_cast<UpdatePath>(7);
  expect_rejected({&good}, {2.0f}, bad_path, "path");
  ScaleUpdateRecipe bad_format = kFusedMax;
  bad_format.format = static_cast<Format>(7);
  expect_rejected({&good}, {2.0f}, bad_format, "format");

  EXPECT_EQ(good.amax_history, before.amax_history);
  EXPECT_EQ(good.scale, before.scale);
}

}  // namespace
}  // namespace fp8sm::kernels
