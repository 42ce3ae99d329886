// Each abstraction of explorer/model/abstractions.hpp changes counts and nothing else: with it
// and without it, the depth-6 searches of the three semantics violate the same invariants with
// the same shortest counterexamples, and it stores no more states (a test per semantics and
// set of invariants checked, the search with every abstraction on run once for the
// abstractions compared under those invariants); and each merge it makes is
// of two states with one future (checked merge by merge, 4 or 5 statements deep). A deliberately unsound
// abstraction (Abstractions::unsound_forget_ownership) passes the first check and fails the
// second: what makes passing both worth something.
#include <gtest/gtest.h>

#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "explorer/model/alphabet.hpp"
#include "explorer/model/model_state.hpp"
#include "explorer/search/search.hpp"
#include "spec/scenario_parser.hpp"

namespace fp8sm::explorer {
namespace {

using spec::Invariant;
using spec::Semantics;

// What a search concludes, as text: each invariant's verdict and, for a violated one, its
// shortest counterexample (its length, program and reason).
std::string verdicts(const SearchResult& result, const spec::InvariantSet& checked) {
  std::string text;
  for (Invariant i : spec::kAllInvariants) {
    if (!checked.contains(i)) continue;
    text += std::string(spec::id(i)) + (result.violating_states.count(i) != 0 ? " violated\n" : " holds\n");
  }
  for (const Counterexample& c : result.counterexamples) {
    text += std::string(spec::id(c.invariant)) + " in " + std::to_string(c.length) + ": " +
            spec::print_scenario_one_line(c.program) + " (" + c.reason + ")\n";
  }
  return text;
}

SearchOptions at_depth(Semantics semantics, int depth, const spec::InvariantSet& checks) {
  SearchOptions options;
  options.semantics = semantics;
  options.depth = depth;
  options.checks = checks;
  // One thread: ctest runs two of these tests side by side, which keeps both cores busy without the
  // parallel search's own cost (a tenth more CPU, measured on a pair of these tests).
  options.threads = 1;
  options.abstractions = Abstractions::sound();
  return options;
}

spec::InvariantSet of(std::initializer_list<Invariant> invariants) {
  spec::InvariantSet set;
  for (Invariant i : invariants) set.add(i);
  return set;
}

// One semantics searched to depth 6 checking `checks` with every sound abstraction, then once
// for each abstraction in `turned_off` with that one off: the same verdicts and shortest
// counterexamples, and the abstraction merges states only (no layer larger). The abstractions
// compared under the same checks share the search with all of them on (it is the larger part
// of CI's test time otherwise). Returns the states each stored: (all on, that one off), in the
// order of `turned_off`.
using Switch = bool Abstractions::*;
std::vector<std::pair<std::uint64_t, std::uint64_t>> compare_at_depth_6(Semantics semantics,
                                                                        const spec::InvariantSet& checks,
                                                                        std::initializer_list<Switch> turned_off) {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> stored;
  const SearchResult abstracted = search(at_depth(semantics, 6, checks));
  for (Switch off : turned_off) {
    SCOPED_TRACE("the abstraction turned off: number " + std::to_string(stored.size() + 1) + " of the test's list");
    SearchOptions options = at_depth(semantics, 6, checks);
    options.abstractions.*off = false;
    const SearchResult exact = search(options);
    EXPECT_EQ(verdicts(abstracted, checks), verdicts(exact, checks));
    EXPECT_EQ(abstracted.layers.size(), exact.layers.size());
    for (std::size_t d = 0; d < exact.layers.size() && d < abstracted.layers.size(); ++d) {
      EXPECT_LE(abstracted.layers[d].distinct, exact.layers[d].distinct) << "depth " << d;
    }
    stored.emplace_back(abstracted.distinct, exact.distinct);
  }
  return stored;
}

// Each comparison runs once per semantics, a test each (ctest runs them side by side).
class AbstractionsAtDepth6 : public ::testing::TestWithParam<Semantics> {};

INSTANTIATE_TEST_SUITE_P(EverySemantics, AbstractionsAtDepth6, ::testing::ValuesIn(spec::kAllSemantics),
                         [](const ::testing::TestParamInfo<Semantics>& param) {
                           return std::string(spec::name(param.param));
                         });

// The step number: it matters only where the numerics are carried, so the searches compared
// check the invariants that do not carry them (with them, the abstraction changes no byte).
// Programs that differ only in how many steps they ended are one: fewer states, every semantics.
TEST_P(AbstractionsAtDepth6, UnreadStepNumbersChangeNoVerdict) {
  const auto stored = compare_at_depth_6(GetParam(), of({Invariant::I1, Invariant::I2, Invariant::I6, Invariant::I7}),
                                         {&Abstractions::unread_step_numbers});
  for (const auto& [abstracted, exact] : stored) EXPECT_LT(abstracted, exact);
}

// I3's observer keeping only what can still violate I3, with I1 checked beside it.
TEST_P(AbstractionsAtDepth6, SettledOwnershipChangesNoVerdict) {
  compare_at_depth_6(GetParam(), of({Invariant::I1, Invariant::I3}), {&Abstractions::settled_ownership});
}

// The numerics renamed at each step's start, with every invariant that carries them (I8 too:
// the two runs renamed together). Programs that differ only in which earlier steps made the
// values held, or in how many steps ran, are one: fewer states, every semantics.
TEST_P(AbstractionsAtDepth6, NumericsFromStepStartChangeNoVerdict) {
  const auto stored = compare_at_depth_6(
      GetParam(), of({Invariant::I4, Invariant::I5, Invariant::I8, Invariant::I9}), {&Abstractions::numerics_from_step_start});
  for (const auto& [abstracted, exact] : stored) EXPECT_LT(abstracted, exact);
}

// Without I8: the backward metas left out, and the numerics renamed within a step too.
TEST_P(AbstractionsAtDepth6, NumericsWithoutI8ChangeNoVerdict) {
  compare_at_depth_6(GetParam(), of({Invariant::I4, Invariant::I5, Invariant::I9}),
                     {&Abstractions::unread_backward_metas, &Abstractions::numerics_within_step});
}

// With I8: what makes its run without checkpoints finite. Leaving that run out once I8 has
// judged its last step merges the programs that diverged from it or parted on exceptions;
// counting the step's updates as the runs' difference merges steps that make many; renaming
// both runs within a step merges steps that fold many histories. I8 is checked with I1 and I2,
// whose counts it compares, and I5, whose numerics it shares.
const spec::InvariantSet kWithTransparency = of({Invariant::I1, Invariant::I2, Invariant::I5, Invariant::I8});

TEST_P(AbstractionsAtDepth6, TransparencyAbstractionsChangeNoVerdict) {
  const auto stored = compare_at_depth_6(GetParam(), kWithTransparency,
                                         {&Abstractions::settled_transparency, &Abstractions::relative_step_counts,
                                          &Abstractions::numerics_within_step_with_reference});
  EXPECT_LT(stored.front().first, stored.front().second);  // the settled transparency merges, every semantics
}

// A merge is sound when the states it makes one have the same future: the same statements may
// follow, each with the same verdict, and their successors are merged again (a bisimulation on
// the states reached). Checked here directly: every state of up to `depth` statements, run
// exactly (no abstraction) and run as the search runs it (under `abstractions`), grouped by the
// latter's fingerprint; each member of a group against the group's first, statement by
// statement, and each statement's verdict under the abstractions against the exact one. The
// programs start with `prefix` (closing braces count as statements here).
// Returns the first disagreement, or "" if none.
std::string first_unsound_merge(Semantics semantics, const spec::InvariantSet& checks, const Abstractions& abstractions,
                                int depth, const std::vector<spec::Statement>& prefix = {}) {
  ModelRunner exact(semantics, checks, true, Abstractions{});
  ModelRunner abstract(semantics, checks, true, abstractions);
  AlphabetOptions alphabet;
  std::vector<std::vector<spec::Statement>> states = {prefix};
  std::unordered_set<Fingerprint, FingerprintHash> seen;
  // Abstract fingerprint -> the group's first state and, once a second member needs it, the
  // first's future (computed once per group, not once per member).
  struct Group {
    std::size_t first;
    std::string future;
    bool future_known = false;
  };
  std::map<Fingerprint, Group> groups;
  auto exact_state = std::make_unique<ModelState>();
  auto state = std::make_unique<ModelState>();
  auto other = std::make_unique<ModelState>();
  auto child = std::make_unique<ModelState>();
  auto exact_child = std::make_unique<ModelState>();
  auto rebuild = [](ModelRunner& runner, ModelState& into, const std::vector<spec::Statement>& path) {
    runner.initial(into);
    for (const spec::Statement& s : path) runner.apply(into, s);
  };
  auto statements_after = [&](const ModelState& from) {
    std::vector<spec::Statement> next;
    next_statements(from.facts, alphabet, next);
    if (!from.facts.open.empty()) next.push_back(close_statement());
    return next;
  };
  // The future of an abstract state one statement deep: per statement, its verdict, the end's
  // verdict at top level, and the successor's fingerprint.
  auto future = [&](const ModelState& from) {
    std::string text;
    for (const spec::Statement& s : statements_after(from)) {
      abstract.copy(*child, from);
      const spec::InvariantSet violated = abstract.apply(*child, s).violations();
      text += std::to_string(static_cast<int>(s.op)) + "/" + std::to_string(s.name) + ": " + violated.to_string() +
              " -> " + std::to_string(abstract.fingerprint(*child).high) + "." +
              std::to_string(abstract.fingerprint(*child).low);
      if (child->facts.open.empty()) text += " end " + abstract.end_here(*child).violations().to_string();
      text += "\n";
    }
    return text;
  };
  auto program = [&](const std::vector<spec::Statement>& path) {
    return spec::print_scenario_one_line(program_of(path, alphabet));
  };
  std::size_t layer_begin = 0;
  for (int d = 0; d <= depth; ++d) {
    const std::size_t layer_end = states.size();
    for (std::size_t i = layer_begin; i < layer_end; ++i) {
      rebuild(exact, *exact_state, states[i]);
      rebuild(abstract, *state, states[i]);
      const auto [entry, added] = groups.emplace(abstract.fingerprint(*state), Group{i, "", false});
      if (!added) {
        Group& group = entry->second;
        if (!group.future_known) {
          rebuild(abstract, *other, states[group.first]);
          group.future = future(*other);
          group.future_known = true;
        }
        if (group.future != future(*state)) {
          return "merged with different futures: " + program(states[group.first]) + " and " + program(states[i]);
        }
      }
      for (const spec::Statement& s : statements_after(*exact_state)) {
        exact.copy(*exact_child, *exact_state);
        abstract.copy(*child, *state);
        const spec::InvariantSet exact_verdict = exact.apply(*exact_child, s).violations();
        if (abstract.apply(*child, s).violations() != exact_verdict) {
          std::vector<spec::Statement> path = states[i];
          path.push_back(s);
          return "a verdict differs from the exact one: " + program(path);
        }
        if (d == depth || !seen.insert(exact.fingerprint(*exact_child)).second) continue;
        std::vector<spec::Statement> path = states[i];
        path.push_back(s);
        states.push_back(std::move(path));
      }
    }
    layer_begin = layer_end;
  }
  return "";
}

// The same abstractions, merge by merge: each state the step-number abstraction makes one with
// another has the other's future, up to 5 statements deep.
TEST(Abstractions, UnreadStepNumbersMergeOnlyStatesWithOneFuture) {
  const spec::InvariantSet checks = of({Invariant::I1, Invariant::I2, Invariant::I6, Invariant::I7});
  for (Semantics semantics : spec::kAllSemantics) {
    EXPECT_EQ(first_unsound_merge(semantics, checks, Abstractions::sound(), 5), "") << spec::name(semantics);
  }
}

// And those of the settled ownership, with I3 checked (the step numbers' too: both are on).
TEST(Abstractions, SettledOwnershipMergesOnlyStatesWithOneFuture) {
  const spec::InvariantSet checks = of({Invariant::I1, Invariant::I3});
  for (Semantics semantics : spec::kAllSemantics) {
    EXPECT_EQ(first_unsound_merge(semantics, checks, Abstractions::sound(), 5), "") << spec::name(semantics);
  }
}

// Where the numerics' renaming has most to rename: a step that ends holding a stash (upstream,
// pr3213) or a checkpoint's kept stash (fp8sm) and amaxes, for a later step's recompute; and a
// step whose checkpoint keeps a copy of a history an update made.
const char* const kStepsHoldingNumerics[] = {
    "autocast on {\n  checkpoint reentrant {\n    linear L0\n  }\n}\n",
    "autocast on {\n  linear L0\n  checkpoint nonreentrant {\n    linear L0\n  }\n}\n",
};
const char* const kCopiesOfUpdatedHistories[] = {
    "autocast on {\n  linear L0\n}\nautocast on {\n  checkpoint reentrant {\n    linear L0\n  }\n}\n",
    "autocast on {\n  linear L0\n}\nautocast on {\n  checkpoint nonreentrant {\n    linear L0\n  }\n}\n",
};

// Every sound abstraction's merges, checked from the empty program (5 statements deep), from
// the steps holding numerics (5) and, with `copies`, from the copies of updated histories (4).
void expect_sound_merges_from_numerics_held(const spec::InvariantSet& checks, bool copies) {
  for (Semantics semantics : spec::kAllSemantics) {
    EXPECT_EQ(first_unsound_merge(semantics, checks, Abstractions::sound(), 5), "") << spec::name(semantics);
    auto from = [&](const char* start, int depth) {
      EXPECT_EQ(
          first_unsound_merge(semantics, checks, Abstractions::sound(), depth, spec::parse_scenario(start).statements), "")
          << spec::name(semantics) << " after " << start;
    };
    for (const char* start : kStepsHoldingNumerics) from(start, 5);
    if (!copies) continue;
    for (const char* start : kCopiesOfUpdatedHistories) from(start, 4);
  }
}

// And those of the numerics renamed at each step's start, with the invariants that carry them:
// from the empty program, and from steps that leave numerics held for later steps.
TEST(Abstractions, NumericsFromStepStartMergeOnlyStatesWithOneFuture) {
  const spec::InvariantSet checks = of({Invariant::I4, Invariant::I5, Invariant::I8, Invariant::I9});
  expect_sound_merges_from_numerics_held(checks, false);
}

// And without I8, where every numerics abstraction is on (the backward metas left out, the
// renaming within a step), from the empty program and from steps that hold copies of metas.
TEST(Abstractions, NumericsWithoutI8MergeOnlyStatesWithOneFuture) {
  const spec::InvariantSet checks = of({Invariant::I4, Invariant::I5, Invariant::I9});
  expect_sound_merges_from_numerics_held(checks, true);
}

// Programs where I8's abstractions have most to merge: two that diverge from their reference
// (recompute_uncaptured; a raise in a checkpoint's original forward, which the reference has no
// checkpoint to raise in), one whose step makes two updates, one whose checkpoint recomputes in
// the program's backward only, and one that parts from its reference on an exception (a
// reentrant checkpoint refuses a second backward, retain or not: a RuntimeError the reference
// does not raise).
const char* const kTransparencyStarts[] = {
    "autocast on {\n  linear L0\n  recompute_uncaptured\n}\n",
    "autocast on {\n  checkpoint reentrant {\n    linear L0\n    raise original\n  }\n}\n",
    "autocast on {\n  linear L0\n}\nautocast on {\n  linear L0\n}\n",
    "autocast on {\n  checkpoint reentrant {\n    linear L0\n  }\n}\n",
    "checkpoint reentrant {\n}\nbackward retain\nbackward\n",
};

// Every sound abstraction's merges with I8 checked, from the empty program (5 statements deep)
// and from each of those (4).
TEST(Abstractions, TransparencyMergesOnlyStatesWithOneFuture) {
  for (Semantics semantics : spec::kAllSemantics) {
    EXPECT_EQ(first_unsound_merge(semantics, kWithTransparency, Abstractions::sound(), 5), "")
        << spec::name(semantics);
    for (const char* start : kTransparencyStarts) {
      EXPECT_EQ(first_unsound_merge(semantics, kWithTransparency, Abstractions::sound(), 4,
                                    spec::parse_scenario(start).statements),
                "")
          << spec::name(semantics) << " after " << start;
    }
  }
}

// Forgetting the machine's ownership merges upstream states that disagree on who makes a later
// forward update. Upstream's shortest counterexamples at depth 6 survive it (they are found
// before the merges matter, so the verdict comparison alone lets it pass), but the merge-by-merge
// check sees it. (Under fp8sm and pr3213 the same check finds no such merge to depth 5.)
TEST(Abstractions, TheMergeCheckCatchesAnUnsoundAbstraction) {
  const spec::InvariantSet checks = of({Invariant::I1, Invariant::I2, Invariant::I6, Invariant::I7});
  Abstractions unsound = Abstractions::sound();
  unsound.unsound_forget_ownership = true;
  const std::string merge = first_unsound_merge(Semantics::Upstream, checks, unsound, 5);
  EXPECT_NE(merge, "");
  EXPECT_EQ(first_unsound_merge(Semantics::Upstream, checks, Abstractions::sound(), 5), "");
}


// Taking a held step number for the current step's (an off-by-one in the rebasing) makes a
// later step's pop of an earlier step's stash entry look paired: upstream and pr3213 then miss
// I4 where the exact run sees it. The merge check from a step that leaves a stash sees it; the
// comparison of depth-6 verdicts does not (the first I4 violations come sooner).
TEST(Abstractions, TheMergeCheckCatchesAnUnsoundRenaming) {
  const spec::InvariantSet checks = of({Invariant::I4, Invariant::I5, Invariant::I8, Invariant::I9});
  Abstractions unsound = Abstractions::sound();
  unsound.unsound_held_steps_current = true;
  const auto prefix = spec::parse_scenario(kStepsHoldingNumerics[0]).statements;
  for (Semantics semantics : {Semantics::Upstream, Semantics::Pr3213}) {
    EXPECT_EQ(first_unsound_merge(semantics, checks, unsound, 3, prefix),
              "a verdict differs from the exact one: autocast on { checkpoint reentrant { linear L0 } }; save A; step; "
              "backward A")
        << spec::name(semantics);
    EXPECT_EQ(first_unsound_merge(semantics, checks, Abstractions::sound(), 3, prefix), "") << spec::name(semantics);
  }
}

// Renaming within a step while a checkpoint keeps a copy of the module's meta (the condition
// left out) renames the live history and the one its original forward saw, not the copy: the
// recompute replays the copy and sees another scaling, an I5 violation the exact run does not
// have. Every semantics keeps such a copy (a stash, a kept stash, the meta saved for a restore).
TEST(Abstractions, TheMergeCheckCatchesARenamingWithCopiesHeld) {
  const spec::InvariantSet checks = of({Invariant::I4, Invariant::I5, Invariant::I9});
  Abstractions unsound = Abstractions::sound();
  unsound.unsound_rename_with_copies = true;
  for (Semantics semantics : spec::kAllSemantics) {
    const auto prefix = spec::parse_scenario(kCopiesOfUpdatedHistories[0]).statements;
    EXPECT_EQ(first_unsound_merge(semantics, checks, unsound, 2, prefix),
              "a verdict differs from the exact one: autocast on { linear L0 }; autocast on { checkpoint reentrant { "
              "linear L0 } }; backward")
        << spec::name(semantics);
    EXPECT_EQ(first_unsound_merge(semantics, checks, Abstractions::sound(), 2, prefix), "") << spec::name(semantics);
  }
}

// Taking the runs for parted at their first different exception, before the step's end judges
// it: a program whose reentrant checkpoint refuses a second backward (its saved tensors went with
// the first, retain or not) raises a RuntimeError its reference does not, an I8 violation at the
// step's end; settled at the raise, it is one with a program that diverged (recompute_uncaptured),
// whose I8 nothing violates. Upstream raises so from the empty program within 4 statements.
TEST(Abstractions, TheMergeCheckCatchesTransparencySettledTooSoon) {
  Abstractions unsound = Abstractions::sound();
  unsound.unsound_settle_at_first_difference = true;
  EXPECT_EQ(first_unsound_merge(Semantics::Upstream, kWithTransparency, unsound, 4),
            "merged with different futures: checkpoint reentrant { recompute_uncaptured }; backward and checkpoint "
            "reentrant { }; backward retain; backward");
  EXPECT_EQ(first_unsound_merge(Semantics::Upstream, kWithTransparency, Abstractions::sound(), 4), "");
}

// Renaming the program's run alone within a step, as without I8: values equal in the two
// runs no longer are. fp8sm's first autocast region folds the same history in both runs;
// renamed in the program alone, the two differ at the step's end, an I8 violation the exact
// runs do not have.
TEST(Abstractions, TheMergeCheckCatchesTheProgramRenamedAlone) {
  Abstractions unsound = Abstractions::sound();
  unsound.unsound_rename_program_alone = true;
  EXPECT_EQ(first_unsound_merge(Semantics::Fp8sm, kWithTransparency, unsound, 4),
            "a verdict differs from the exact one: autocast on { linear L0 }; step");
  EXPECT_EQ(first_unsound_merge(Semantics::Fp8sm, kWithTransparency, Abstractions::sound(), 4), "");
}

// A module's first history is zero, and the renaming at a step's start keeps zero: a held
// history that is the fold of a meta whose history is still zero must become the fold of the
// renamed row 0 too. Under upstream and pr3213 an autocast inside a checkpoint makes no forward
// update, so the program holds its first cast in row 0 past the step, over a zero history,
// where the reference has folded it; the program's next update makes the reference's history.
// Named as an unrelated constant, the two stayed apart: an I8 violation that the exact runs do
// not have (as the renaming was before this was fixed).
TEST(Abstractions, TheRenamingAtAStepsStartKeepsFoldsOfTheFirstHistory) {
  const auto prefix = spec::parse_scenario("checkpoint reentrant {\n  autocast on {\n    linear L0\n  }\n}\nstep\n");
  Abstractions renaming;
  renaming.numerics_from_step_start = true;
  for (Semantics semantics : {Semantics::Upstream, Semantics::Pr3213}) {
    EXPECT_EQ(first_unsound_merge(semantics, kWithTransparency, renaming, 4, prefix.statements), "")
        << spec::name(semantics);
  }
}

// Counting the step's updates up to one, as a (0, 1, many) counter: under upstream a checkpoint
// around an autocast leaves the program one forward update behind its reference (its exit
// inside the checkpoint makes none), and a backward through a checkpoint inside an autocast
// brings it one ahead (the recompute updates again). So a state two behind and one one behind,
// made one by the saturation, part at the next such backward: one is level, the other not.
TEST(Abstractions, TheMergeCheckCatchesSaturatedStepCounts) {
  Abstractions unsound = Abstractions::sound();
  unsound.unsound_saturate_step_counts = true;
  const auto prefix = spec::parse_scenario(
      "autocast on {\n  checkpoint reentrant {\n  }\n}\ncheckpoint reentrant {\n  autocast on {\n  }\n}\n");
  const std::string merge = first_unsound_merge(Semantics::Upstream, kWithTransparency, unsound, 5, prefix.statements);
  EXPECT_EQ(merge.rfind("merged with different futures: ", 0), 0u) << merge;
  EXPECT_EQ(first_unsound_merge(Semantics::Upstream, kWithTransparency, Abstractions::sound(), 5, prefix.statements),
            "");
}

}  // namespace
}  // namespace fp8sm::explorer
