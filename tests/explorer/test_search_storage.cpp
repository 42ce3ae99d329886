// The search's storage: the fingerprint set against std::unordered_set, the one-byte
// statement code, search paths, discovery keys and the chunked frontier.
#include <gtest/gtest.h>

#include <random>
#include <unordered_set>

#include "explorer/model/statement_code.hpp"
#include "explorer/search/fingerprint_set.hpp"
#include "explorer/search/frontier.hpp"
#include "explorer/search/search_path.hpp"
#include "statemachine/storage.hpp"

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

// A snapshot puts a table back from its slots: the same fingerprints, and insertions go on as
// in the original.
TEST(FingerprintSet, PutBackFromItsSlotsItIsTheSameSet) {
  FingerprintSet original;
  std::mt19937_64 random(11);
  std::vector<std::uint64_t> values;
  for (int i = 0; i < 5000; ++i) values.push_back(random());
  for (std::uint64_t v : values) original.insert(v);
  FingerprintSet copy;
  copy.assign_slots(original.slots());
  EXPECT_EQ(copy.size(), original.size());
  EXPECT_EQ(copy.bytes(), original.bytes());
  for (std::uint64_t v : values) EXPECT_FALSE(copy.insert(v));
  for (int i = 0; i < 5000; ++i) {
    const std::uint64_t v = random();
    EXPECT_EQ(copy.insert(v), original.insert(v));
  }
  EXPECT_EQ(copy.slots(), original.slots());
  // Slots no table would hold: too few, or fuller than its growth allows.
  EXPECT_THROW(copy.assign_slots(std::vector<std::uint64_t>(8, 1)), std::invalid_argument);
  EXPECT_THROW(copy.assign_slots(std::vector<std::uint64_t>(100, 1)), std::invalid_argument);
}

std::vector<spec::Statement> every_statement() {
  std::vector<spec::Statement> all;
  for (int op = 0; op <= static_cast<int>(spec::Op::Data); ++op) {  // Data is the last
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

TEST(StatementCode, EveryStatementHasItsOwnCodeAndComesBack) {
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

TEST(StatementCode, NamesOutOfRangeAreRefused) {
  EXPECT_THROW(pack_statement({spec::Op::Linear, kMaxPackedModules, false, {}}), std::invalid_argument);
  EXPECT_THROW(pack_statement({spec::Op::Save, kMaxPackedTapes, false, {}}), std::invalid_argument);
}

TEST(StatementCode, NoStatementHasThePaddingCode) {
  for (const spec::Statement& s : every_statement()) EXPECT_NE(pack_statement(s), kNoStatementCode);
}

TEST(SearchPath, HoldsItsCapacityOfCodesAndRefusesMore) {
  SearchPath path;
  EXPECT_TRUE(path.empty());
  std::vector<spec::Statement> expected;
  for (int i = 0; i < kMaxPathCodes; ++i) {
    const spec::Statement s = i % 2 == 0 ? spec::Statement{spec::Op::Linear, static_cast<std::uint16_t>(i % 5), false, {}}
                                         : spec::Statement{spec::Op::Close, 0, false, {}};
    path.push(pack_statement(s));
    expected.push_back(s);
    EXPECT_EQ(path.size(), i + 1);
  }
  const std::vector<spec::Statement> back = path.statements();
  ASSERT_EQ(back.size(), expected.size());
  for (std::size_t i = 0; i < back.size(); ++i) {
    EXPECT_EQ(back[i].op, expected[i].op);
    EXPECT_EQ(back[i].name, expected[i].name);
  }
  EXPECT_THROW(path.push(pack_statement(expected[0])), statemachine::CapacityError);
  EXPECT_EQ(path.parent().size(), kMaxPathCodes - 1);
  EXPECT_NE(path.parent(), path);
  EXPECT_EQ(SearchPath().parent(), SearchPath());
}

// Keys order a layer as parents then links: every child of an earlier parent comes before every
// child of a later one, whatever the link indices.
TEST(DiscoveryKey, OrdersChildrenByParentThenLink) {
  const std::uint64_t a = child_key(0, 0, 3);
  const std::uint64_t b = child_key(0, 0, 4);
  ASSERT_LT(a, b);
  EXPECT_LT(child_key(a, 1, 255), child_key(b, 1, 0));
  EXPECT_LT(child_key(a, 1, 0), child_key(a, 1, 1));
  // Seven layers of 255 still fit: the deepest parent a search of depth 8 expands.
  std::uint64_t key = 0;
  for (int depth = 0; depth < kMaxKeyLayers; ++depth) key = child_key(key, depth, 255);
  EXPECT_EQ(key, ~std::uint64_t{0});
  EXPECT_THROW(child_key(0, 0, kMaxLinksPerParent), statemachine::CapacityError);
}

TEST(Frontier, KeepsEntriesAcrossChunksAndFindsKeys) {
  Frontier frontier;
  const std::size_t n = 3 * Frontier::kChunk + 17;
  for (std::size_t i = 0; i < n; ++i) {
    FrontierEntry entry;
    entry.key = 2 * i;
    entry.path.push(static_cast<std::uint8_t>(i % 7));
    frontier.push_back(entry);
  }
  ASSERT_EQ(frontier.size(), n);
  EXPECT_EQ(frontier.bytes(), 4 * Frontier::kSlotChunkBytes);
  for (std::size_t i = 0; i < n; i += 997) {
    EXPECT_EQ(frontier[i].key, 2 * i);
    EXPECT_EQ(frontier[i].path[0], i % 7);
  }
  EXPECT_EQ(frontier.lower_bound(0), 0u);
  EXPECT_EQ(frontier.lower_bound(2 * 5000), 5000u);
  EXPECT_EQ(frontier.lower_bound(2 * 5000 + 1), 5001u);
  EXPECT_EQ(frontier.lower_bound(~std::uint64_t{0}), n);
  frontier.truncate(Frontier::kChunk);
  EXPECT_EQ(frontier.size(), Frontier::kChunk);
  EXPECT_EQ(frontier.bytes(), Frontier::kSlotChunkBytes);
}

// Paths past the 16 codes a slot holds are kept whole beside the slots, in entry order: read
// back whole, cut back with the entries, and counted in the bytes only where they occur.
TEST(Frontier, KeepsLongPathsBesideTheSlots) {
  Frontier frontier;
  auto path_of = [](std::size_t i) {
    SearchPath path;
    const int length = i % 3 == 0 ? 17 + static_cast<int>(i % 31) : 1 + static_cast<int>(i % 16);
    for (int c = 0; c < length; ++c) path.push(static_cast<std::uint8_t>((i + c) % 11));
    return path;
  };
  EXPECT_EQ(frontier.growth_for(path_of(1)), Frontier::kSlotChunkBytes);
  EXPECT_EQ(frontier.growth_for(path_of(0)), Frontier::kSlotChunkBytes + Frontier::kLongPathChunkBytes);
  const std::size_t n = Frontier::kChunk + 5;
  for (std::size_t i = 0; i < n; ++i) frontier.push_back(FrontierEntry{i, path_of(i)});
  EXPECT_EQ(frontier.bytes(), 2 * Frontier::kSlotChunkBytes + Frontier::kLongPathChunkBytes);
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_EQ(frontier[i].path, path_of(i)) << i;
    ASSERT_EQ(frontier.key(i), i);
  }
  frontier.truncate(10);
  frontier.push_back(FrontierEntry{10, path_of(12)});
  for (std::size_t i = 0; i < 10; ++i) EXPECT_EQ(frontier[i].path, path_of(i)) << i;
  EXPECT_EQ(frontier[10].path, path_of(12));
  frontier.set_key(3, 99);
  EXPECT_EQ(frontier[3].key, 99u);
  EXPECT_EQ(frontier[3].path, path_of(3));
}

}  // namespace
}  // namespace fp8sm::explorer
