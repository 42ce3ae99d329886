// The seed table (spec §4, measured on TE main and quoted in the PR #3213 discussion): the
// upstream model must reproduce every count exactly, and pr3213 must give 1/1 on every row.
#include <fmt/core.h>
#include <gtest/gtest.h>

#include <ostream>

#include "scenario_helpers.hpp"

namespace fp8sm {
namespace {

using spec::Invariant;
using spec::Semantics;
using test_support::catalogue_program;
using test_support::invariants;

struct SeedRow {
  const char* catalogue_name;
  int upstream_forward;
  int upstream_backward;
};

// From the PR #3213 discussion on TE main, as spec §4 quotes it ("no checkpoint fwd=1 bwd=1", ...).
const SeedRow kSeed[] = {
    {"no-checkpoint", 1, 1},
    {"nonreentrant-single", 2, 1},
    {"nonreentrant-per-layer", 4, 1},
    {"reentrant-single-1-layer", 2, 1},
    {"reentrant-single-3-layers", 2, 3},
    {"reentrant-per-layer", 4, 3},
    {"nested-reentrant", 3, 2},
};

// gtest prints a row by this, not by its bytes (the name's pointer would differ run to run).
void PrintTo(const SeedRow& row, std::ostream* out) {
  *out << row.catalogue_name << " (upstream " << row.upstream_forward << "/" << row.upstream_backward << ")";
}

class SeedTable : public ::testing::TestWithParam<SeedRow> {};

TEST_P(SeedTable, UpstreamReproducesTheMeasuredCounts) {
  const SeedRow row = GetParam();
  const auto report = explorer::run_scenario(catalogue_program(row.catalogue_name), Semantics::Upstream);
  ASSERT_EQ(report.steps.size(), 1u);
  EXPECT_EQ(report.steps[0].forward_updates, row.upstream_forward);
  EXPECT_EQ(report.steps[0].backward_updates, row.upstream_backward);
  EXPECT_TRUE(report.steps[0].raised.empty());
}

TEST_P(SeedTable, Pr3213GivesOneForwardAndOneBackwardUpdate) {
  const SeedRow row = GetParam();
  const auto report = explorer::run_scenario(catalogue_program(row.catalogue_name), Semantics::Pr3213);
  ASSERT_EQ(report.steps.size(), 1u);
  EXPECT_EQ(report.steps[0].forward_updates, 1);
  EXPECT_EQ(report.steps[0].backward_updates, 1);
  // Counts equal to the program without checkpoints: I1 and I2 hold, and I8 can only fail on
  // numerics (the nested row's stash pairing, spec §4 row 7).
  EXPECT_FALSE(report.steps[0].violations.contains(Invariant::I1));
  EXPECT_FALSE(report.steps[0].violations.contains(Invariant::I2));
  EXPECT_FALSE(report.steps[0].violations.contains(Invariant::I3));
}

// Invariants that follow from the counts alone: a duplicate forward update breaks I1, more
// than one backward update breaks I2, counts different from the program without checkpoints
// (1/1, row 1) break I8.
TEST_P(SeedTable, UpstreamViolationsFollowFromTheCounts) {
  const SeedRow row = GetParam();
  const auto report = explorer::run_scenario(catalogue_program(row.catalogue_name), Semantics::Upstream);
  const spec::InvariantSet v = report.steps.at(0).violations;
  EXPECT_EQ(v.contains(Invariant::I1), row.upstream_forward != 1);
  if (row.upstream_backward > 1) {
    EXPECT_TRUE(v.contains(Invariant::I2));
  }
  EXPECT_EQ(v.contains(Invariant::I8), row.upstream_forward != 1 || row.upstream_backward != 1);
}

INSTANTIATE_TEST_SUITE_P(Rows, SeedTable, ::testing::ValuesIn(kSeed),
                         [](const ::testing::TestParamInfo<SeedRow>& row_info) {
                           std::string name = row_info.param.catalogue_name;
                           for (char& c : name) c = c == '-' ? '_' : c;
                           return name;
                         });

TEST(SeedTable, NoCheckpointViolatesNothingInEitherSemantics) {
  for (Semantics s : spec::kAllSemantics) {
    const auto report = explorer::run_scenario(catalogue_program("no-checkpoint"), s);
    EXPECT_TRUE(report.steps.at(0).violations.empty()) << spec::name(s);
  }
}

// The worked example of docs/scenarios.md (the scenario language document): reentrant, single,
// 3 layers under upstream violates exactly I1, I2, I3, I6 (soft) and I8.
TEST(SeedTable, LanguageDocumentExampleVerdict) {
  const auto report = explorer::run_scenario(catalogue_program("reentrant-single-3-layers"), Semantics::Upstream);
  EXPECT_EQ(report.steps.at(0).violations,
            invariants({Invariant::I1, Invariant::I2, Invariant::I3, Invariant::I6, Invariant::I8}));
}

// Spec §4 row 7 explains why: the inner exit clears `region`, so L1 and L2 are never stashed
// and L0 is stashed twice, one entry left over per step (I4), and L0's recompute reads the
// pre-update stash (I5).
TEST(SeedTable, NestedReentrantLeavesAStashEntryUnderUpstream) {
  const auto report = explorer::run_scenario(catalogue_program("nested-reentrant"), Semantics::Upstream);
  EXPECT_TRUE(report.steps.at(0).violations.contains(Invariant::I4));
  EXPECT_TRUE(report.steps.at(0).violations.contains(Invariant::I5));
}

// Per the spec's closed formulas: (1+K, 1) for K non-reentrant checkpoints and (1+K, L) for K
// reentrant ones over L layers.
TEST(SeedTable, UpstreamGeneralFormulas) {
  for (int k = 1; k <= 4; ++k) {
    std::string nr = "autocast on {";
    std::string re = "autocast on {";
    for (int i = 0; i < k; ++i) {
      nr += fmt::format(" checkpoint nonreentrant {{ linear L{} }};", i);
      re += fmt::format(" checkpoint reentrant {{ linear L{} }};", i);
    }
    nr += " }; backward";
    re += " }; backward";
    const auto n = test_support::run_text(nr, Semantics::Upstream);
    EXPECT_EQ(n.steps.at(0).forward_updates, 1 + k);
    EXPECT_EQ(n.steps.at(0).backward_updates, 1);
    const auto r = test_support::run_text(re, Semantics::Upstream);
    EXPECT_EQ(r.steps.at(0).forward_updates, 1 + k);
    EXPECT_EQ(r.steps.at(0).backward_updates, k);
  }
  for (int layers = 1; layers <= 5; ++layers) {
    std::string single = "autocast on { checkpoint reentrant {";
    for (int i = 0; i < layers; ++i) single += fmt::format(" linear L{};", i);
    single += " } }; backward";
    const auto r = test_support::run_text(single, Semantics::Upstream);
    EXPECT_EQ(r.steps.at(0).forward_updates, 2);
    EXPECT_EQ(r.steps.at(0).backward_updates, layers);
  }
}

}  // namespace
}  // namespace fp8sm
