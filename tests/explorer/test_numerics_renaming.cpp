// The numerics renamed at a step's start (explorer/model/numerics_renaming.hpp), on hand-made
// numerics: which equalities it keeps, and that it makes two runs that differ only in their
// values' names one.
#include <gtest/gtest.h>

#include <memory>

#include "explorer/model/numerics_renaming.hpp"

namespace fp8sm::explorer {
namespace {

using Numerics = NumericsState<FlatStorage>;

SymbolicMeta meta(std::uint64_t history, std::uint64_t current, std::int32_t oldest_step = -1) {
  SymbolicMeta m;
  m.history = history;
  m.current = current;
  m.current_oldest_step = current == 0 ? -1 : oldest_step;
  return m;
}

// One module whose forward meta holds (x, c) unfolded from step 7, a stash entry with the same
// meta, a backward meta whose history is the fold of (x, c), and what a checkpoint saw.
std::unique_ptr<RunState> holding(std::uint64_t x, std::uint64_t c, std::uint64_t other) {
  auto run = std::make_unique<RunState>();
  Numerics& n = run->observers.numerics;
  n.step = 7;
  run->model.step = 8;
  n.modules.resize(1);
  n.modules[0].forward = meta(x, c, 7);
  n.modules[0].backward = meta(SymbolicMeta::folded(x, c), 0);
  n.modules[0].saved_for_restore = meta(0, 0);
  Numerics::StashEntry entry;
  entry.value = meta(x, c, 6);
  entry.step = 7;
  n.stash.push_back(entry);
  Numerics::Seen seen;
  seen.history = other;
  n.seen.push_back(seen);
  return run;
}

TEST(NumericsRenaming, KeepsZeroEqualitiesAndHeldFolds) {
  const std::uint64_t x = mix64(11), c = mix64(12) | 1u, other = mix64(13);
  auto run = holding(x, c, other);
  rename_numerics_at_step_start(*run, nullptr);
  const Numerics& n = run->observers.numerics;
  const SymbolicMeta& forward = n.modules[0].forward;
  // Equal values stay equal, different ones different, zero zero.
  EXPECT_EQ(forward, n.stash[0].value);
  EXPECT_NE(forward.history, forward.current);
  EXPECT_NE(n.seen[0].history, forward.history);
  EXPECT_NE(forward.history, 0u);
  EXPECT_EQ(n.modules[0].saved_for_restore.history, 0u);
  EXPECT_EQ(n.modules[0].backward.current, 0u);
  // Folding the held meta again makes the held fold again: a later update of a popped copy
  // finds the history the backward meta holds, as the exact run would.
  EXPECT_EQ(SymbolicMeta::folded(forward.history, forward.current), n.modules[0].backward.history);
  // Names, not the past: other values in the same places give the same state.
  auto again = holding(mix64(21), mix64(22) | 1u, mix64(23));
  rename_numerics_at_step_start(*again, nullptr);
  EXPECT_EQ(again->observers.numerics.modules[0].forward, forward);
  EXPECT_EQ(again->observers.numerics.modules[0].backward, n.modules[0].backward);
  EXPECT_EQ(again->observers.numerics.seen[0].history, n.seen[0].history);
}

TEST(NumericsRenaming, HeldStepNumbersAreEarlierThanEveryStepToCome) {
  auto run = holding(mix64(1), mix64(2) | 1u, mix64(3));
  rename_numerics_at_step_start(*run, nullptr);
  const Numerics& n = run->observers.numerics;
  EXPECT_EQ(run->model.step, kRebasedStep);
  EXPECT_LT(n.stash[0].step, static_cast<std::int32_t>(kRebasedStep));
  EXPECT_LT(n.modules[0].forward.current_oldest_step, static_cast<std::int32_t>(kRebasedStep));
  EXPECT_GE(n.modules[0].forward.current_oldest_step, 0);  // still some step: row 0 is not empty
  EXPECT_EQ(n.modules[0].backward.current_oldest_step, -1);
}

// I8 compares the program's metas with the run's without checkpoints: both are renamed by one
// renaming, so a value they share keeps one name.
TEST(NumericsRenaming, RenamesTheTwoRunsTogether) {
  const std::uint64_t shared = mix64(31);
  auto program = holding(mix64(32), mix64(33) | 1u, shared);
  auto reference = holding(shared, 0, mix64(34));
  rename_numerics_at_step_start(*program, reference.get());
  EXPECT_EQ(reference->observers.numerics.modules[0].forward.history, program->observers.numerics.seen[0].history);
  EXPECT_NE(reference->observers.numerics.seen[0].history, program->observers.numerics.seen[0].history);
}

// A module's first history is zero. A held history that is the fold of a meta over that zero
// (the reference folded the cast the program still holds in row 0) stays that fold.
TEST(NumericsRenaming, KeepsTheFoldOfAMetaWhoseHistoryIsZero) {
  const std::uint64_t c = mix64(35) | 1u;
  auto program = holding(0, c, mix64(36));
  auto reference = holding(SymbolicMeta::folded(0, c), 0, mix64(37));
  rename_numerics_at_step_start(*program, reference.get());
  const SymbolicMeta& forward = program->observers.numerics.modules[0].forward;
  EXPECT_EQ(forward.history, 0u);
  EXPECT_EQ(SymbolicMeta::folded(forward.history, forward.current),
            reference->observers.numerics.modules[0].forward.history);
}

// Within a step: one module whose forward meta holds this step's tag of its history, a
// checkpoint's forward that saw that history, nothing copied.
std::unique_ptr<RunState> mid_step(std::uint64_t history, std::uint64_t backward_history) {
  auto run = std::make_unique<RunState>();
  Numerics& n = run->observers.numerics;
  n.step = static_cast<std::int32_t>(kRebasedStep);
  n.modules.resize(1);
  n.modules[0].forward = meta(history, amax_tag(0, n.step, history, false), n.step);
  n.modules[0].backward = meta(backward_history, 0);
  Numerics::Seen seen;
  seen.history = history;
  n.seen.push_back(seen);
  return run;
}

TEST(NumericsRenaming, WithinAStepTheRowKeepsItsTagOfTheRenamedHistory) {
  auto run = mid_step(mix64(41), mix64(42));
  ASSERT_TRUE(rename_numerics_within_step(*run));
  const Numerics& n = run->observers.numerics;
  const SymbolicMeta& forward = n.modules[0].forward;
  EXPECT_NE(forward.history, mix64(41));
  EXPECT_EQ(n.seen[0].history, forward.history);
  // A cast now ORs in the same tag: row 0 stays as it is, as in the exact run.
  EXPECT_EQ(forward.current, amax_tag(0, n.step, forward.history, false));
  EXPECT_EQ(n.modules[0].backward.history, mix64(42));  // the backward metas are left alone
  // Another past, the same state.
  auto again = mid_step(mix64(51), mix64(42));
  ASSERT_TRUE(rename_numerics_within_step(*again));
  EXPECT_EQ(again->observers.numerics.modules[0].forward, forward);
}

// A copy of a meta (here a stash entry) can come back and be folded again into a history held
// now: no renaming then. Nor where row 0 holds anything but this step's tag (an earlier
// step's amax, or the tag of another history).
TEST(NumericsRenaming, WithinAStepNothingIsRenamedWhileACopyOrAnOlderAmaxIsHeld) {
  auto with_stash = mid_step(mix64(61), 0);
  Numerics::StashEntry entry;
  entry.value = with_stash->observers.numerics.modules[0].forward;
  with_stash->observers.numerics.stash.push_back(entry);
  EXPECT_FALSE(rename_numerics_within_step(*with_stash));
  EXPECT_EQ(with_stash->observers.numerics.modules[0].forward.history, mix64(61));

  auto older = mid_step(mix64(62), 0);
  older->observers.numerics.modules[0].forward.current |= mix64(63);
  EXPECT_FALSE(rename_numerics_within_step(*older));
  EXPECT_EQ(older->observers.numerics.modules[0].forward.history, mix64(62));

  // The unsound test's variant renames even with the copy held.
  EXPECT_TRUE(rename_numerics_within_step(*with_stash, false));
}

// With I8, within a step, both runs at once (rename_numerics_within_step_together). A run
// without checkpoints sees none: the reference holds the program's metas but not its seen.
std::unique_ptr<RunState> reference_of(const RunState& program) {
  auto run = std::make_unique<RunState>();
  run->observers.numerics.step = program.observers.numerics.step;
  run->observers.numerics.modules = program.observers.numerics.modules;
  return run;
}

// In step, one renaming for both: forward and backward histories alike, rows as their tags.
TEST(NumericsRenaming, WithI8TheTwoRunsInStepAreRenamedTogetherBackwardToo) {
  const std::uint64_t backward_history = mix64(71);
  auto program = mid_step(mix64(72), backward_history);
  program->observers.numerics.modules[0].backward.current = amax_tag(0, kRebasedStep, backward_history, true);
  auto reference = reference_of(*program);
  ASSERT_TRUE(rename_numerics_within_step_together(*program, *reference));
  const Numerics::Module& mine = program->observers.numerics.modules[0];
  const Numerics::Module& theirs = reference->observers.numerics.modules[0];
  EXPECT_EQ(mine.forward, theirs.forward);
  EXPECT_EQ(mine.backward, theirs.backward);
  EXPECT_NE(mine.backward.history, backward_history);
  EXPECT_NE(mine.backward.history, mine.forward.history);
  EXPECT_EQ(mine.backward.current, amax_tag(0, kRebasedStep, mine.backward.history, true));
  EXPECT_EQ(program->observers.numerics.seen[0].history, mine.forward.history);
  // Another past, the same state.
  auto again = mid_step(mix64(73), mix64(74));
  again->observers.numerics.modules[0].backward.current = amax_tag(0, kRebasedStep, mix64(74), true);
  auto again_reference = reference_of(*again);
  ASSERT_TRUE(rename_numerics_within_step_together(*again, *again_reference));
  EXPECT_EQ(again->observers.numerics.modules[0].forward, mine.forward);
  EXPECT_EQ(again->observers.numerics.modules[0].backward, mine.backward);
}

// Out of step (the reference's history one fold ahead of the program's, whose row 0 holds
// that fold's tag): nothing is renamed, so the program's next update still makes the
// reference's history. Nor with a copy held in either run.
TEST(NumericsRenaming, WithI8NothingIsRenamedOutOfStepOrWithACopy) {
  auto program = mid_step(mix64(81), 0);
  const SymbolicMeta& forward = program->observers.numerics.modules[0].forward;
  auto reference = reference_of(*program);
  reference->observers.numerics.modules[0].forward = meta(SymbolicMeta::folded(forward.history, forward.current), 0);
  EXPECT_FALSE(rename_numerics_within_step_together(*program, *reference));
  EXPECT_EQ(SymbolicMeta::folded(forward.history, forward.current),
            reference->observers.numerics.modules[0].forward.history);

  auto with_stash = mid_step(mix64(82), 0);
  auto its_reference = reference_of(*with_stash);
  Numerics::StashEntry entry;
  entry.value = with_stash->observers.numerics.modules[0].forward;
  with_stash->observers.numerics.stash.push_back(entry);
  EXPECT_FALSE(rename_numerics_within_step_together(*with_stash, *its_reference));
  EXPECT_EQ(its_reference->observers.numerics.modules[0].forward.history, mix64(82));
}

}  // namespace
}  // namespace fp8sm::explorer
