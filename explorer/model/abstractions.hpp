// The abstractions that make the states of a bounded search finite, so that a search to the
// fixpoint ends (docs/explorer.md "Fixpoint", where each one's soundness is argued). Each
// merges states that no future statement tells apart, and so changes counts, never a verdict
// or a shortest counterexample; tests/explorer/test_abstractions.cpp checks that at depth 6
// for the three semantics, and that it would see an unsound one.
//
// A search to the fixpoint takes them all (Abstractions::sound()); a depth-bounded search none,
// by default, so that its counts stay those of every figure before them.
//
// Not listed, since it merges no state: the log forgets the statements no body can replay
// (interpreter.hpp, forget_unreadable_log), which the canonical bytes never held.
#pragma once

namespace fp8sm::explorer {

struct Abstractions {
  // The interpreter's step number is part of a state only when an observer that reads it is
  // carried (the numerics: I4 I5 I8 I9); nothing else in a run's future reads it.
  bool unread_step_numbers = false;

  // I3's observer keeps only what can still violate it (ownership_scopes.hpp,
  // forget_what_cannot_violate): no dead owners, no closed scope that cannot hold two live
  // owners, no revival without one, no repeats. Otherwise a step holds every scope it closed.
  bool settled_ownership = false;

  // The numerics' values and step numbers (I4 I5 I8 I9) as a step's start leaves them
  // distinguishable, no more (numerics_renaming.hpp): after each `step`, the held values are
  // renamed by first occurrence, keeping which is the fold of which held meta, and the held
  // step numbers say "an earlier step". Otherwise each step tags its amaxes with its number,
  // and every history is a hash of all the updates before.
  bool numerics_from_step_start = false;

  // And within a step, between two statements, where the numerics hold no copy of a meta
  // (numerics_renaming.hpp, rename_numerics_within_step; only without I8, whose run without
  // checkpoints would have to be renamed with the program's). Otherwise each autocast region's
  // update folds a new history, however many a step holds.
  bool numerics_within_step = false;

  // The modules' backward metas (what the gradient casts accumulate, what each backward update
  // folds) are read by I8 alone, which compares the program's with the run's without
  // checkpoints; without I8 they are left out of a state. Otherwise every backward pass over a
  // retained tape folds a new history that no check reads.
  bool unread_backward_metas = false;

  // I8 compares a step of the program with the same step of the program without checkpoints
  // only until the program diverges from it (spec::ReferenceDivergence) or the two runs part on
  // exceptions (transparency.hpp); both are for good. From then on the run without
  // checkpoints, the step's counts and escaped exceptions and the backward metas are read by no
  // check, and they are left out of a state (the numerics are then renamed within a step as
  // without I8). Otherwise a diverged program's reference grows with every statement, its
  // checkpoint bodies' modules recorded as nodes of a graph no bound holds.
  bool settled_transparency = false;

  // While I8 still judges, the step's counts of the two runs as their difference: I8 asks
  // whether they are equal at the step's end, and each run's later updates add to its own
  // count, so what both counted so far says nothing. Otherwise a step that makes many updates
  // counts them all.
  bool relative_step_counts = false;

  // And with I8 (numerics_within_step's renaming, for both runs at once and the backward metas
  // too): where neither run holds a copy and the two runs' metas are equal, module by module
  // (numerics_renaming.hpp, rename_numerics_within_step_together). Otherwise, with I8, each
  // autocast region's update and each backward pass folds a new history into both runs.
  bool numerics_within_step_with_reference = false;

  // Deliberately unsound, for the test that must catch an unsound abstraction only: the
  // machine's ownership (the bit saved at autocast entry, the ownership frames, upstream's FIFO
  // of captured bits), which decides who makes the forward update, is left out of a state.
  bool unsound_forget_ownership = false;

  // Deliberately unsound, likewise: numerics_from_step_start taking the held step numbers for
  // the current step's, so that an amax left in row 0 by an earlier step looks fresh (I5) and
  // an earlier step's stash entry looks paired (I4).
  bool unsound_held_steps_current = false;

  // Deliberately unsound, likewise: numerics_within_step renaming while copies of metas are
  // held, which a recompute can pop or replay and fold again into a history held now.
  bool unsound_rename_with_copies = false;

  // Deliberately unsound, likewise: settled_transparency taking the runs for parted as soon as
  // this step's escaped exceptions differ, before the step's end judges them, which raises I8
  // unless both runs raised only user exceptions by then.
  bool unsound_settle_at_first_difference = false;

  // Deliberately unsound, likewise: numerics_within_step_with_reference renaming the program's
  // run alone, as numerics_within_step does without I8, so that its values no longer equal the
  // reference's.
  bool unsound_rename_program_alone = false;

  // Deliberately unsound, likewise: relative_step_counts saturated at one, as a (0, 1, many)
  // counter would be; I8 asks for equal counts, so a step two updates behind its reference is
  // not one a single update behind.
  bool unsound_saturate_step_counts = false;

  // Every sound abstraction.
  static Abstractions sound() {
    Abstractions all;
    all.unread_step_numbers = true;
    all.settled_ownership = true;
    all.numerics_from_step_start = true;
    all.unread_backward_metas = true;
    all.numerics_within_step = true;
    all.settled_transparency = true;
    all.relative_step_counts = true;
    all.numerics_within_step_with_reference = true;
    return all;
  }

  bool operator==(const Abstractions& o) const {
    return unread_step_numbers == o.unread_step_numbers && settled_ownership == o.settled_ownership &&
           numerics_from_step_start == o.numerics_from_step_start &&
           unread_backward_metas == o.unread_backward_metas && numerics_within_step == o.numerics_within_step &&
           settled_transparency == o.settled_transparency && relative_step_counts == o.relative_step_counts &&
           unsound_settle_at_first_difference == o.unsound_settle_at_first_difference &&
           numerics_within_step_with_reference == o.numerics_within_step_with_reference &&
           unsound_rename_program_alone == o.unsound_rename_program_alone &&
           unsound_saturate_step_counts == o.unsound_saturate_step_counts &&
           unsound_forget_ownership == o.unsound_forget_ownership &&
           unsound_held_steps_current == o.unsound_held_steps_current &&
           unsound_rename_with_copies == o.unsound_rename_with_copies;
  }
  bool operator!=(const Abstractions& o) const { return !(*this == o); }
};

}  // namespace fp8sm::explorer
