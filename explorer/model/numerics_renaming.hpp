// The numerics at a step's start, made independent of the program's past beyond what a later
// statement can tell (Abstractions::numerics_from_step_start; docs/explorer.md, "What makes the
// bounded space finite", where its soundness is argued).
//
// The numerics observer (I4 I5 I8 I9) stands for amax histories and row-0 amaxes by 64-bit
// values: a cast ORs in a tag made of its module, direction, step and the history it saw; an
// update folds row 0 into the history (SymbolicMeta). Its checks only ask whether two values
// are equal and whether a step number is the current one. So the values and the step numbers
// grow with the program's length while what the checks can tell apart does not:
//
// - At a step's start no later statement can make a tag held now (tags carry their step), so a
//   held value comes back later only as a copy, or as the fold of a meta held now (its history
//   and row 0 move together: copies, pops and replays take whole metas). The values are renamed
//   to constants by first occurrence, keeping zero, and keeping each held fold of a held meta a
//   fold of the renamed meta: every equality a later comparison can meet stays as it was.
// - Every step number held is an earlier step's; the checks compare a held number with the
//   current step only. Held numbers become 0, the steps to come are all number 1.
//
// With the run without checkpoints (I8) both runs are renamed together: I8 compares their
// metas with each other.
#pragma once

#include "explorer/model/model_state.hpp"

namespace fp8sm::explorer {

// Renames the numerics' values and rebases the step numbers of `program` and, when not null,
// `reference`, right after a `step` statement (the next statement starts step number
// kRebasedStep). `held_steps_earlier`: false only for the test that must catch an unsound
// abstraction (the held step numbers then read as the current step's).
void rename_numerics_at_step_start(RunState& program, RunState* reference, bool held_steps_earlier = true);

// Within a step (Abstractions::numerics_within_step, without I8 or once it has settled:
// Abstractions::settled_transparency): where the numerics hold no
// copy of a forward meta (no stash, kept stash, meta from before a recompute's pop, meta saved
// for a restore) and each forward row 0 is empty or the current step's one tag of its own
// meta's history, no later statement can make a held forward history again, only the row-0
// tags, from the histories held. So those histories (and those checkpoints' forwards saw) are
// renamed to constants by first occurrence, and each row 0 becomes its tag of the renamed
// history. The backward metas are left alone: no forward value can equal one (tags carry their
// direction), and without I8 nothing reads them (Abstractions::unread_backward_metas). False,
// changing nothing, where that does not hold. `only_without_copies`: false only for the test that must
// catch an unsound abstraction (it renames with copies held, which a recompute may fold again).
bool rename_numerics_within_step(RunState& run, bool only_without_copies = true);

// The same with I8, within a step (Abstractions::numerics_within_step_with_reference): both
// runs' histories, backward ones too, which I8 compares, renamed by one renaming, where
// neither run holds a copy, every row 0 (forward and backward) is empty or the current step's
// one tag of its own history, and the two runs' metas are equal, module by module (in step).
// One renaming keeps every equality between the runs' values. In step, because were one run's
// history a fold the other has still to make (the runs fold at different statements),
// renaming both to unrelated constants would lose that the lagging run's next fold makes the
// other's value. False, changing nothing, where that does not hold. `together`: false only for
// the test that must catch an unsound abstraction (the program's run renamed alone, as without
// I8, in step or not: its values then differ from the reference's that were equal).
bool rename_numerics_within_step_together(RunState& program, RunState& reference, bool together = true);

// The step number the abstraction gives every step: a run starts with it (ModelRunner::initial).
inline constexpr std::uint32_t kRebasedStep = 1;

}  // namespace fp8sm::explorer
