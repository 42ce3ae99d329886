// The exhaustive search's flat state: a successor allocates nothing, the search's shortcut
// around renaming ids is never wrong, and the state is what its capacities promise.
//
// Successors are walked as the search runs them (explorer/model/successor_walk.hpp), every program
// of up to 4 statements (closes free) for every semantics, with every invariant checked and
// with I1 alone (the SPIN comparison's configuration); the renaming's shortcut and the copy,
// from every state those programs reach, once each.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <new>
#include <type_traits>
#include <unordered_map>

#include "explorer/model/alphabet.hpp"
#include "explorer/model/canonical_state.hpp"
#include "explorer/model/fingerprint.hpp"
#include "explorer/model/model_state.hpp"
#include "explorer/model/successor_walk.hpp"
#include "explorer/search/search.hpp"
#include "tests/counting_operator_new.hpp"

namespace fp8sm {
namespace {

using explorer::ModelRunner;
using explorer::ModelState;
using spec::Semantics;
using spec::Statement;

spec::InvariantSet only(spec::Invariant i) {
  spec::InvariantSet set;
  set.add(i);
  return set;
}

static_assert(std::is_trivially_copyable_v<ModelState>);

// Copying the parent's carried parts, executing the statement, the fingerprint, the end of
// the program: none allocates, once the first fingerprint has grown its thread's buffer.
TEST(FlatState, ASuccessorAllocatesNothing) {
  {  // the counter counts: a zero below is not a replacement that was never linked
    const unsigned long long before = counting_new::calls;
    counting_new::counting = true;
    int* volatile escaped = new int(1);  // volatile: the allocation cannot be elided
    counting_new::counting = false;
    delete escaped;
    ASSERT_EQ(counting_new::calls, before + 1);
  }
  for (Semantics s : spec::kAllSemantics) {
    for (const spec::InvariantSet& checks : {spec::InvariantSet{}, only(spec::Invariant::I1)}) {
      ModelRunner runner(s, checks, true);
      {
        auto warm = std::make_unique<ModelState>();
        runner.initial(*warm);
        (void)runner.fingerprint(*warm);
      }
      unsigned long long parts[4] = {0, 0, 0, 0};
      auto around = [&](explorer::SuccessorPart part, auto&& run) {
        const unsigned long long before = counting_new::calls;
        counting_new::counting = true;
        run();
        counting_new::counting = false;
        parts[static_cast<int>(part)] += counting_new::calls - before;
      };
      explorer::SuccessorWalk<decltype(around)> walk(runner, 4, around);
      const unsigned long long successors = walk.run(4);
      EXPECT_GT(successors, 100000u);
      const std::string what = std::string(spec::name(s)) + (checks.empty() ? " all" : " I1");
      EXPECT_EQ(parts[0], 0u) << what << ": copying the parent";
      EXPECT_EQ(parts[1], 0u) << what << ": executing the statement";
      EXPECT_EQ(parts[2], 0u) << what << ": the fingerprint";
      EXPECT_EQ(parts[3], 0u) << what << ": judging the end";
    }
  }
}

// Every program of up to `depth` statements (closing braces free), depth first:
// visit(parent, statement, child) for each successor. A state is expanded once, where it is
// first reached with the most statements left (its successors are the same wherever it is
// reached), so each visit follows another state: a sibling's successor, or a cousin's.
void for_each_successor(ModelRunner& runner, int depth,
                        const std::function<void(const ModelState&, const Statement&, const ModelState&)>& visit) {
  std::unordered_map<explorer::Fingerprint, int, explorer::FingerprintHash> expanded;  // with this budget
  std::function<void(const ModelState&, int)> walk = [&](const ModelState& parent, int budget) {
    const auto [at, first] = expanded.try_emplace(runner.fingerprint(parent), budget);
    if (!first && at->second >= budget) return;
    at->second = budget;
    std::vector<Statement> next;
    if (budget > 0) explorer::next_statements(parent.facts, explorer::AlphabetOptions{}, next);
    if (!parent.facts.open.empty()) next.push_back(explorer::close_statement());
    for (const Statement& statement : next) {
      auto child = std::make_unique<ModelState>(parent);
      runner.apply(*child, statement);
      visit(parent, statement, *child);
      if (::testing::Test::HasFatalFailure()) return;
      walk(*child, statement.op == spec::Op::Close ? budget : budget - 1);
    }
  };
  auto root = std::make_unique<ModelState>();
  runner.initial(*root);
  walk(*root, depth);
}

// The search skips renaming ids after the statements that cannot disturb them
// (explorer::keeps_canonical_ids). Wherever it does, renaming would have changed nothing.
TEST(FlatState, SkippingTheRenamingIsRightWhereverItIsSkipped) {
  for (Semantics s : spec::kAllSemantics) {
    for (const spec::InvariantSet& checks : {spec::InvariantSet{}, only(spec::Invariant::I1)}) {
      ModelRunner runner(s, checks, true);
      int skipped = 0, checked = 0;
      for_each_successor(runner, 4, [&](const ModelState& parent, const Statement& statement, const ModelState& child) {
        for (const explorer::RunState* run : {&child.program, &child.reference}) {
          if (run == &child.reference && !runner.with_reference()) continue;
          auto renamed = std::make_unique<explorer::RunState>(*run);
          explorer::canonicalize(*renamed, runner.carried());
          ASSERT_EQ(std::memcmp(renamed.get(), run, sizeof *run), 0)
              << spec::name(s) << ": the state after a statement is not canonical";
          ++checked;
        }
        skipped += explorer::keeps_canonical_ids(statement.op, explorer::ids_before(parent.program, statement.op), child.program)
                       ? 1
                       : 0;
      });
      EXPECT_GT(checked, 40000);
      EXPECT_GT(skipped, 10000);  // the shortcut was taken, and often
    }
  }
}

// ModelRunner::copy moves the observers' lists only as far as they are used
// (observer_state.hpp, copy_used). Into a state that held another program's (other sizes in
// every list), it must leave the copied state: a member copy_used forgets shows in the canonical
// bytes (everything the future depends on). Every invariant checked, so every part is carried.
// (The bytes between members are padding, which no copy need keep: the lists' own bytes are
// test_bounded_vector's.)
TEST(FlatState, CopyingTheUsedSlotsLeavesTheSameState) {
  for (Semantics s : spec::kAllSemantics) {
    ModelRunner runner(s, spec::InvariantSet{}, true);
    auto recycled = std::make_unique<ModelState>();
    runner.initial(*recycled);
    int compared = 0;
    for_each_successor(runner, 4, [&](const ModelState&, const Statement&, const ModelState& child) {
      runner.copy(*recycled, child);  // over the state visited before: a sibling's or a cousin's
      ASSERT_EQ(runner.canonical_bytes(*recycled), runner.canonical_bytes(child)) << spec::name(s) << ": the copy is another state";
      ++compared;
    });
    EXPECT_GT(compared, 50000);
  }
}

// A program that needs more room than a list of the flat state has is refused, naming the
// list: never a silent wrong answer.
TEST(FlatState, AProgramPastACapacityIsRefusedNamingTheList) {
  ModelRunner runner(Semantics::Fp8sm, {}, true);
  auto state = std::make_unique<ModelState>();
  runner.initial(*state);
  const Statement open = spec::make_statement(spec::Op::AutocastOn);
  try {
    for (int i = 0; i < 64; ++i) runner.apply(*state, open);
    FAIL() << "64 nested blocks fit a state sized for 8 statements";
  } catch (const statemachine::CapacityError& e) {
    EXPECT_NE(std::string(e.what()).find("in the model's fixed-capacity state"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace fp8sm
