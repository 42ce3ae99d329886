// The search's storage: the fingerprint set against std::unordered_set, and the one-byte
// statement code of the search tree.
#include <gtest/gtest.h>

#include <random>
#include <unordered_set>

#include "explorer/fingerprint_set.hpp"
#include "explorer/search_tree.hpp"

namespace fp8sm::explorer {
namespace {

TEST(FingerprintSet, AgreesWithAStandardSetThroughManyGrowths) {
  FingerprintSet set(16);
  std::unordered_set<std::uint64_t> reference;
  std::mt19937_64 random(7);
  for (int i = 0; i < 200000; ++i) {
    // Few distinct values, so most insertions are repeats, as in a search.
    const std::uint64_t value = random() % 150000u * 0x9E3779B97F4A7C15ull;
    ASSERT_EQ(set.insert(value), reference.insert(value).second) << i;
  }
  EXPECT_EQ(set.size(), reference.size());
  for (std::uint64_t value : reference) EXPECT_TRUE(set.contains(value));
  EXPECT_FALSE(set.contains(12345));  // not a multiple of the odd constant above... unless by chance
  // The table stays between 75 % and 90 % full once it has grown.
  const double load = static_cast<double>(set.size()) * 8.0 / static_cast<double>(set.bytes());
  EXPECT_GE(load, 0.74);
  EXPECT_LE(load, 0.91);
}

TEST(FingerprintSet, ZeroIsAFingerprintLikeAnyOther) {
  FingerprintSet set;
  EXPECT_FALSE(set.contains(0));
  EXPECT_TRUE(set.insert(0));
  EXPECT_FALSE(set.insert(0));
  EXPECT_TRUE(set.contains(0));
}

std::vector<spec::Statement> every_statement() {
  std::vector<spec::Statement> all;
  for (int op = 0; op <= static_cast<int>(spec::Op::Step); ++op) {
    spec::Statement s;
    s.op = static_cast<spec::Op>(op);
    if (s.op == spec::Op::Linear) {
      for (int m = 0; m < kMaxPackedModules; ++m) all.push_back({s.op, static_cast<std::uint16_t>(m), false, {}});
    } else if (s.op == spec::Op::Save) {
      for (int t = 0; t < kMaxPackedTapes; ++t) all.push_back({s.op, static_cast<std::uint16_t>(t), false, {}});
    } else if (s.op == spec::Op::Backward) {
      for (bool retain : {false, true}) {
        all.push_back({s.op, spec::kCurrentGraph, retain, {}});
        for (int t = 0; t < kMaxPackedTapes; ++t) all.push_back({s.op, static_cast<std::uint16_t>(t), retain, {}});
      }
    } else {
      all.push_back(s);
    }
  }
  return all;
}

TEST(SearchTree, EveryStatementHasItsOwnCodeAndComesBack) {
  std::unordered_set<int> codes;
  for (const spec::Statement& s : every_statement()) {
    const std::uint8_t code = pack_statement(s);
    EXPECT_TRUE(codes.insert(code).second) << "two statements share code " << int{code};
    const spec::Statement back = unpack_statement(code);
    EXPECT_EQ(back.op, s.op);
    EXPECT_EQ(back.name, s.name);
    EXPECT_EQ(back.retain, s.retain);
  }
}

TEST(SearchTree, NamesOutOfRangeAreRefused) {
  EXPECT_THROW(pack_statement({spec::Op::Linear, kMaxPackedModules, false, {}}), std::invalid_argument);
  EXPECT_THROW(pack_statement({spec::Op::Save, kMaxPackedTapes, false, {}}), std::invalid_argument);
}

TEST(SearchTree, PathsWalkBackToTheRootAcrossChunks) {
  SearchTree tree;
  std::uint32_t at = 0;
  for (int i = 0; i < 70000; ++i) {  // more than one chunk
    at = tree.add(at, {spec::Op::Linear, static_cast<std::uint16_t>(i % 3), false, {}});
  }
  const std::vector<spec::Statement> path = tree.path(at);
  ASSERT_EQ(path.size(), 70000u);
  for (std::size_t i = 0; i < path.size(); ++i) EXPECT_EQ(path[i].name, i % 3);
}

}  // namespace
}  // namespace fp8sm::explorer
