// The search's storage: the fingerprint set against std::unordered_set, the one-byte
// statement code, search paths, discovery keys and the chunked frontier.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <set>
#include <unordered_set>
#include <utility>

#include "explorer/model/statement_code.hpp"
#include "explorer/search/fingerprint_set.hpp"
#include "explorer/search/frontier.hpp"
#include "explorer/search/search_path.hpp"
#include "spread_fingerprints.hpp"
#include "statemachine/storage.hpp"

namespace fp8sm::explorer {
namespace {

// A well-spread fingerprint for each of `n` values (splitmix64 on both words).
Fingerprint fingerprint_of(std::uint64_t value) {
  return {test_support::splitmix64(value), test_support::splitmix64(value ^ 0xA5A5A5A5A5A5A5A5ull)};
}

// What the set keeps of a fingerprint: the high word and the low word's low 16 bits.
std::pair<std::uint64_t, std::uint64_t> kept(const Fingerprint& f) { return {f.high, f.low & 0xFFFF}; }

TEST(FingerprintSet, AgreesWithAStandardSetThroughManyGrowths) {
  FingerprintSet set(16);
  std::set<std::pair<std::uint64_t, std::uint64_t>> reference;
  std::mt19937_64 random(7);
  std::vector<Fingerprint> inserted;
  for (int i = 0; i < 300000; ++i) {
    // Few distinct values, so most insertions are repeats, as in a search.
    const Fingerprint f = fingerprint_of(random() % 200000u);
    ASSERT_EQ(set.insert(f), reference.insert(kept(f)).second) << i;
    inserted.push_back(f);
  }
  EXPECT_EQ(set.size(), reference.size());
  // Every growth rebuilt each fingerprint from its home and its slot: all are still found.
  for (const Fingerprint& f : inserted) ASSERT_TRUE(set.contains(f));
  for (std::uint64_t v = 200000; v < 210000; ++v) ASSERT_FALSE(set.contains(fingerprint_of(v)));
}

// What a table grown where it lies must be: what inserting the old table's fingerprints, in the
// old table's order, into an empty table of the new size leaves (what growing by a copy did),
// byte for byte. Inserts `fingerprints` and compares at each insertion that grew the table once;
// returns how many were compared. (One that makes it grow twice, when the new fingerprint did
// not fit the first growth, leaves within a run the order of the middle table's homes.)
std::size_t insert_comparing_growths_with_copies(FingerprintSet& set, const std::vector<Fingerprint>& fingerprints) {
  std::size_t compared = 0;
  for (const Fingerprint& f : fingerprints) {
    // The table grows when it is full, or earlier when the fingerprint's run would not fit
    // (crowded homes): a small table's fingerprints are kept before each insertion.
    const bool kept = !set.contains(f) && (set.full() || set.size() < 4000);
    const std::vector<Fingerprint> before = kept ? set.fingerprints() : std::vector<Fingerprint>{};
    const std::size_t growths = set.growths();
    set.insert(f);
    if (set.growths() == growths) continue;
    EXPECT_TRUE(kept) << "a table of " << set.size() << " grew before it was full";
    if (set.growths() != growths + 1) continue;
    FingerprintSet copy(set.home_slots());
    for (const Fingerprint& g : before) EXPECT_TRUE(copy.insert(g));
    EXPECT_TRUE(copy.insert(f));
    EXPECT_EQ(copy.growths(), 0u);
    EXPECT_TRUE(copy.table_bytes() == set.table_bytes()) << "growth " << growths;
    ++compared;
  }
  return compared;
}

// A table grows where it lies, writing the new table behind where it reads the old one. Its
// bytes are a copy's: so nothing was overwritten before it was read, no run and no offset is out
// of place, and every unused bit is zero (the bytes a snapshot keeps). From 16 homes, where a
// slot is wider than a word (60 + 16 bits), through growths by a fifth, to a reserve that makes
// the table 50 times larger at once.
TEST(FingerprintSet, GrowingWhereItLiesLeavesTheBytesOfACopy) {
  for (const std::size_t distinct : {100u, 5000u, 100000u}) {
    FingerprintSet set(16);
    std::mt19937_64 random(distinct);
    std::vector<Fingerprint> fingerprints;
    for (std::size_t i = 0; i < 2 * distinct; ++i) fingerprints.push_back(fingerprint_of(random() % distinct));
    ASSERT_GT(insert_comparing_growths_with_copies(set, fingerprints), 3u) << distinct;
    EXPECT_EQ(set.growths_in_place(), set.growths()) << "hashed fingerprints always fit the grown table";
    const std::vector<Fingerprint> before = set.fingerprints();
    set.reserve(50 * distinct);
    EXPECT_EQ(set.growths_in_place(), set.growths());
    FingerprintSet copy(set.home_slots());
    for (const Fingerprint& f : before) copy.insert(f);
    EXPECT_TRUE(copy.table_bytes() == set.table_bytes()) << distinct << ", reserved";
    EXPECT_EQ(set.size(), before.size());
    for (const Fingerprint& f : before) ASSERT_TRUE(set.contains(f));
  }
}

// Two fingerprints that differ in any one of the 80 kept bits are two states, including the
// high word's top bits, which only the slot's index keeps; bits past those 80 are not read.
// (A base's variants in its low high bits share its home: few bases, or they crowd the table.)
TEST(FingerprintSet, TellsApartEveryOneOfItsEightyBits) {
  for (std::size_t reserved : {0u, 100000u}) {
    FingerprintSet set;
    set.reserve(reserved);
    std::vector<Fingerprint> bases;
    for (std::uint64_t v = 0; v < 20; ++v) bases.push_back(fingerprint_of(v));
    for (const Fingerprint& base : bases) ASSERT_TRUE(set.insert(base));
    for (const Fingerprint& base : bases) {
      for (int bit = 0; bit < 64; ++bit) {
        ASSERT_TRUE(set.insert({base.high ^ (1ull << bit), base.low})) << "high bit " << bit;
      }
      for (int bit = 0; bit < 16; ++bit) {
        ASSERT_TRUE(set.insert({base.high, base.low ^ (1ull << bit)})) << "low bit " << bit;
      }
      for (int bit = 16; bit < 64; ++bit) {
        ASSERT_FALSE(set.insert({base.high, base.low ^ (1ull << bit)})) << "low bit " << bit;
      }
    }
    EXPECT_EQ(set.size(), bases.size() * 81);
    for (const Fingerprint& base : bases) {
      for (int bit = 0; bit < 64; ++bit) ASSERT_TRUE(set.contains({base.high ^ (1ull << bit), base.low}));
    }
  }
}

TEST(FingerprintSet, ZeroIsAFingerprintLikeAnyOther) {
  FingerprintSet set;
  EXPECT_FALSE(set.contains({0, 0}));
  EXPECT_TRUE(set.insert({0, 0}));
  EXPECT_FALSE(set.insert({0, 0}));
  EXPECT_TRUE(set.contains({0, 0}));
  EXPECT_TRUE(set.insert({~0ull, 0xFFFF}));  // the last home, the last high word
  EXPECT_TRUE(set.contains({~0ull, 0xFFFF}));
}

// Fingerprints crowded into a few homes (no hash does that, but the table must not lose any):
// the table grows when their runs would push a block's offset past its byte, and finds them
// all.
TEST(FingerprintSet, CrowdedHomesMakeItGrowAndLoseNothing) {
  FingerprintSet set(16);
  std::vector<Fingerprint> crowded;
  for (std::uint64_t i = 0; i < 3000; ++i) crowded.push_back({i << 48, i});  // 1/20 of the high words
  // Their runs lie far past their homes, so each growth where the table lies is tried without
  // writing first (and it fits).
  EXPECT_GT(insert_comparing_growths_with_copies(set, crowded), 3u);
  EXPECT_EQ(set.growths_in_place(), set.growths());
  for (const Fingerprint& f : crowded) ASSERT_TRUE(set.contains(f));
  EXPECT_EQ(set.size(), crowded.size());
  // Crowded past what growing can help: one home, whatever the table's size.
  FingerprintSet one_home(16);
  EXPECT_THROW(
      for (std::uint64_t i = 0; i < 1000; ++i) one_home.insert({0, i}), std::length_error);
}

// A table a fifth larger may hold what it held less well: 318 fingerprints in homes 1 and 2 of
// 1 000 fill slots 1 to 318, so the runs before the second block (slots 64 on) reach 255 slots
// into it, its offset's largest value; in 1 200 homes they fall in homes 2 and 3, and that
// offset would be 256. Growing where it lies refuses (its dry run), the table is copied into
// one that grows again as it fills, and nothing is lost.
TEST(FingerprintSet, WhatTheGrownTableCannotHoldAsItLiesIsCopied) {
  FingerprintSet set(1000);
  const double home_width = 18446744073709551616.0 / 1000;
  std::vector<Fingerprint> clustered;
  for (std::uint64_t i = 0; i < 319; ++i) {
    clustered.push_back({static_cast<std::uint64_t>(home_width * (1.67 + 1.23 * static_cast<double>(i) / 319)), i});
  }
  for (std::size_t i = 0; i + 1 < clustered.size(); ++i) ASSERT_TRUE(set.insert(clustered[i]));
  ASSERT_EQ(set.growths(), 0u) << "318 fit 1 000 homes";
  ASSERT_TRUE(set.insert(clustered.back()));
  EXPECT_GT(set.growths(), set.growths_in_place());
  EXPECT_EQ(set.size(), clustered.size());
  for (const Fingerprint& f : clustered) ASSERT_TRUE(set.contains(f));
}

// The table's bytes a state, 90 % full: what a slot stores (80 bits less the log2 of the homes
// its index tells apart: L = 64 - log2 N rounded up, N = n / 0.9 homes), plus the metadata of a
// rank-and-select quotient filter (an occupied bit a home, a run-end bit a slot, a byte a 64),
// over 0.9. At 10^8, 10^9 and 10^10 states L is 38, 34 and 31 (2^64 / N is 1.66·10^11, 1.66·10^10
// and 1.66·10^9).
TEST(FingerprintSet, SlotsNarrowAsTheTableGrows) {
  const FingerprintSet set;
  auto per_state = [&](double n) { return static_cast<double>(set.bytes_for(static_cast<std::size_t>(n))) / n; };
  constexpr double kMetadataBits = 2 + 8.0 / 64;
  EXPECT_NEAR(per_state(1e8), (38 + 16 + kMetadataBits) / 8 / 0.9, 0.01);
  EXPECT_NEAR(per_state(1e9), (34 + 16 + kMetadataBits) / 8 / 0.9, 0.01);
  EXPECT_NEAR(per_state(1e10), (31 + 16 + kMetadataBits) / 8 / 0.9, 0.01);
  EXPECT_LE(per_state(1e8), 8.0);
}

// The last homes' runs go on past them into the spare slots, and the table grows when those
// are used up (no run wraps around to the first slots).
TEST(FingerprintSet, RunsOfTheLastHomesGoOnPastThem) {
  FingerprintSet set(1000);
  const std::size_t homes = set.home_slots();
  // High words of the last home: from the top down, each a state of its own.
  std::vector<Fingerprint> last_home;
  for (std::uint64_t i = 0; i < 100; ++i) last_home.push_back({~0ull - i, i});
  for (const Fingerprint& f : last_home) ASSERT_TRUE(set.insert(f));
  EXPECT_EQ(set.home_slots(), homes) << "100 fit the spare slots";
  for (const Fingerprint& f : last_home) ASSERT_TRUE(set.contains(f));
  // And fingerprints of the first homes are not taken for them.
  for (std::uint64_t i = 0; i < 100; ++i) ASSERT_TRUE(set.insert({i, i}));
  EXPECT_EQ(set.size(), 200u);
  // Past the spare slots: the table grows (and, since one home keeps them all whatever its
  // size, refuses them in the end).
  EXPECT_THROW(
      for (std::uint64_t i = 100; i < 1000; ++i) set.insert({~0ull - i, i}), std::length_error);
}

// A snapshot puts a table back from its bytes: the same fingerprints, and insertions go on as
// in the original.
TEST(FingerprintSet, PutBackFromItsBytesItIsTheSameSet) {
  FingerprintSet original;
  std::vector<Fingerprint> values;
  for (std::uint64_t v = 0; v < 5000; ++v) values.push_back(fingerprint_of(v));
  for (const Fingerprint& f : values) original.insert(f);
  FingerprintSet copy;
  copy.assign(original.home_slots(), original.table_bytes());
  EXPECT_EQ(copy.size(), original.size());
  EXPECT_EQ(copy.bytes(), original.bytes());
  for (const Fingerprint& f : values) EXPECT_FALSE(copy.insert(f));
  for (std::uint64_t v = 5000; v < 10000; ++v) EXPECT_EQ(copy.insert(fingerprint_of(v)), original.insert(fingerprint_of(v)));
  EXPECT_EQ(copy.table_bytes(), original.table_bytes());
  // Bytes no table would hold: the wrong size, too few homes, a slot before its home's place.
  const std::size_t homes = original.home_slots();
  std::vector<std::uint8_t> bytes = original.table_bytes().to_vector();
  EXPECT_THROW(copy.assign(homes, std::vector<std::uint8_t>(bytes.size() - 1)), std::invalid_argument);
  EXPECT_THROW(copy.assign(8, bytes), std::invalid_argument);
  std::vector<std::uint8_t> full(bytes.size(), 0xFF);
  EXPECT_THROW(copy.assign(homes, full), std::invalid_argument);
  EXPECT_EQ(copy.table_bytes(), original.table_bytes()) << "a refused table changes nothing";
}

// A table reserved for a known count may be filled past the usual 90 %, up to 95 % (a search's
// last layer): it holds that many without growing, in fewer bytes than a table reserved 90 %
// full; a snapshot of it is put back; the next fingerprint past it grows it by a fifth as usual.
TEST(FingerprintSet, AReservedLoadFillsItUpTo95PercentThenItGrowsByAFifth) {
  constexpr std::size_t kStates = 100000;
  FingerprintSet usual(16);
  usual.reserve(kStates);
  FingerprintSet set(16);
  set.reserve(kStates, FingerprintSet::kFullestLoad);
  EXPECT_LT(set.bytes(), usual.bytes());
  EXPECT_EQ(set.bytes(), FingerprintSet(16).bytes_for(kStates, FingerprintSet::kFullestLoad));
  ASSERT_GE(set.capacity(), kStates);
  const double load = static_cast<double>(kStates) / static_cast<double>(set.home_slots());
  EXPECT_GT(load, 0.94);
  EXPECT_LE(load, FingerprintSet::kFullestLoad);
  const std::size_t homes = set.home_slots(), growths = set.growths();
  for (std::uint64_t v = 0; v < kStates; ++v) ASSERT_TRUE(set.insert(fingerprint_of(v))) << v;
  EXPECT_EQ(set.growths(), growths) << "the runs of a table 95 % full fit its spare slots and offsets";
  EXPECT_EQ(set.home_slots(), homes);

  FingerprintSet copy;
  copy.assign(set.home_slots(), set.table_bytes());
  EXPECT_EQ(copy.size(), kStates);
  EXPECT_EQ(copy.capacity(), set.capacity());

  for (FingerprintSet* table : {&set, &copy}) {
    for (std::uint64_t v = 0; v < kStates; ++v) ASSERT_FALSE(table->insert(fingerprint_of(v))) << v;
    const std::size_t full = table->capacity();
    for (std::uint64_t v = kStates; v <= full; ++v) ASSERT_TRUE(table->insert(fingerprint_of(v)));
    EXPECT_EQ(table->home_slots(), static_cast<std::size_t>(static_cast<double>(homes) * 1.2));
    EXPECT_EQ(table->capacity(), static_cast<std::size_t>(static_cast<double>(table->home_slots()) * 0.9));
    for (std::uint64_t v = 0; v <= full; ++v) ASSERT_TRUE(table->contains(fingerprint_of(v))) << v;
  }
  EXPECT_EQ(copy.table_bytes(), set.table_bytes());
}

// most_within(bytes) is the most fingerprints a table reserved to hold them fits in `bytes`
// while it grows: one more would not fit; and it never says fewer than the table holds.
TEST(FingerprintSet, MostWithinABudgetIsTheLargestReserveThatFits) {
  FingerprintSet set(16);
  for (std::uint64_t v = 0; v < 20000; ++v) set.insert(fingerprint_of(v));
  for (double load : {FingerprintSet::kUsualLoad, FingerprintSet::kFullestLoad}) {
    for (std::size_t bytes : {std::size_t{1000}, set.bytes(), set.bytes() * 3 / 2, std::size_t{10} << 20}) {
      const std::size_t n = set.most_within(bytes, load);
      EXPECT_GE(n, set.size()) << bytes;
      if (n > set.size()) {
        EXPECT_LE(set.bytes_while_reserving(n, load), bytes) << bytes;
      }
      EXPECT_GT(set.bytes_while_reserving(n + 1, load), bytes) << bytes;
    }
  }
  const std::size_t n = set.most_within(std::size_t{10} << 20, FingerprintSet::kFullestLoad);
  const std::size_t before = set.size();
  set.reserve(n, FingerprintSet::kFullestLoad);
  EXPECT_LE(set.bytes(), std::size_t{10} << 20);
  const std::size_t growths = set.growths();
  for (std::uint64_t v = before; v < n; ++v) ASSERT_TRUE(set.insert(fingerprint_of(v)));
  EXPECT_EQ(set.growths(), growths) << "it holds them without growing again";
}

TEST(FingerprintSet, ALoadPast95PercentOrNoneIsRefused) {
  FingerprintSet set(16);
  for (double load : {0.0, -0.5, 0.951, 1.0, std::nan("")}) {
    EXPECT_THROW(set.reserve(1000, load), std::invalid_argument) << load;
  }
  EXPECT_EQ(set.home_slots(), 16u) << "a refused reserve changes nothing";
  EXPECT_NO_THROW(set.reserve(1000, 0.5));
  EXPECT_GE(set.home_slots(), 2000u);
}

// Bytes that hold a table in part: any one bit of a table's bytes flipped is refused (the
// metadata no longer make runs, or an offset is not what the runs make it), or it is a table of
// as many fingerprints, one of them perhaps another (a remainder's bit), the rest the same.
TEST(FingerprintSet, ABitFlippedIsRefusedOrChangesOneFingerprint) {
  FingerprintSet original;
  std::vector<Fingerprint> values;
  for (std::uint64_t v = 0; v < 3000; ++v) values.push_back(fingerprint_of(v));
  for (const Fingerprint& f : values) original.insert(f);
  const std::vector<std::uint8_t> bytes = original.table_bytes().to_vector();
  std::mt19937_64 random(11);
  int refused = 0, accepted = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    std::vector<std::uint8_t> flipped = bytes;
    const std::size_t bit = random() % (bytes.size() * 8);
    flipped[bit / 8] = static_cast<std::uint8_t>(flipped[bit / 8] ^ (1u << (bit % 8)));
    FingerprintSet copy;
    try {
      copy.assign(original.home_slots(), flipped);
    } catch (const std::invalid_argument&) {
      ++refused;
      continue;
    }
    ++accepted;
    ASSERT_EQ(copy.size(), original.size()) << "bit " << bit;
    int missing = 0;
    for (const Fingerprint& f : values) missing += copy.contains(f) ? 0 : 1;
    ASSERT_LE(missing, 1) << "bit " << bit;
  }
  // Both kinds were tried: the metadata (some 1/25 of the bytes) and the remainders.
  EXPECT_GT(refused, 0);
  EXPECT_GT(accepted, 0);
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

// A layer's expansion gives back the chunks of the parents it has read: those holding only
// entries before the one named, slots and long paths both (a chunk of long paths holds
// floor(chunk / 40) paths of 40 codes, below); the later entries read back as they were.
TEST(Frontier, GivesBackTheChunksOfTheEntriesBeforeOne) {
  constexpr int kCodes = 40;
  constexpr std::size_t kPerChunk = Frontier::kLongPathChunkBytes / kCodes;
  auto path_of = [](std::size_t i) {
    SearchPath path;
    for (int c = 0; c < kCodes; ++c) path.push(static_cast<std::uint8_t>((i * 5 + static_cast<std::size_t>(c)) % 13));
    return path;
  };
  Frontier frontier;
  const std::size_t n = 5 * Frontier::kChunk + 3;  // six chunks of slots
  for (std::size_t i = 0; i < n; ++i) frontier.push_back(FrontierEntry{i, path_of(i)});
  const std::size_t long_chunks = (n + kPerChunk - 1) / kPerChunk;
  ASSERT_EQ(frontier.bytes(), 6 * Frontier::kSlotChunkBytes + long_chunks * Frontier::kLongPathChunkBytes);

  const std::size_t first_kept = 2 * Frontier::kChunk + 5;
  frontier.release_before(first_kept);
  // Slot chunks 0 and 1; the long paths' chunks before the one where entry 2 * kChunk - 1's ends.
  const std::size_t long_given_back = (2 * Frontier::kChunk - 1) / kPerChunk;
  EXPECT_EQ(frontier.bytes(), 4 * Frontier::kSlotChunkBytes + (long_chunks - long_given_back) * Frontier::kLongPathChunkBytes);
  for (std::size_t i = 2 * Frontier::kChunk; i < n; ++i) {
    ASSERT_EQ(frontier[i].path, path_of(i)) << i;
    ASSERT_EQ(frontier.key(i), i);
  }
  EXPECT_EQ(frontier.size(), n);

  const std::size_t bytes = frontier.bytes();
  frontier.release_before(first_kept - 1);  // nothing more: the same chunks
  EXPECT_EQ(frontier.bytes(), bytes);
  frontier.release_before(n);  // the last chunk holds entries up to n - 1: kept
  EXPECT_EQ(frontier.bytes(), Frontier::kSlotChunkBytes +
                                  (long_chunks - (5 * Frontier::kChunk - 1) / kPerChunk) * Frontier::kLongPathChunkBytes);
  for (std::size_t i = 5 * Frontier::kChunk; i < n; ++i) ASSERT_EQ(frontier[i].path, path_of(i)) << i;

  frontier.clear();
  EXPECT_EQ(frontier.bytes(), 0u);
  frontier.push_back(FrontierEntry{7, path_of(7)});
  EXPECT_EQ(frontier[0].path, path_of(7));
}

// A long path costs its own codes, not a whole path's 96 bytes: a chunk of long paths holds
// floor(chunk / 40) paths of 40 codes (none crosses into the next chunk), and they read back.
TEST(Frontier, StoresALongPathInItsOwnLength) {
  constexpr int kCodes = 40;
  constexpr std::size_t kPerChunk = Frontier::kLongPathChunkBytes / kCodes;
  static_assert(Frontier::kLongPathChunkBytes % kCodes != 0, "a path would end at a chunk's end");
  auto path_of = [](std::size_t i) {
    SearchPath path;
    for (int c = 0; c < kCodes; ++c) path.push(static_cast<std::uint8_t>((i * 7 + static_cast<std::size_t>(c)) % 13));
    return path;
  };
  Frontier frontier;
  const std::size_t n = 2 * kPerChunk + 1;  // three chunks of codes
  for (std::size_t i = 0; i < n; ++i) {
    if (i == kPerChunk) {
      EXPECT_EQ(frontier.growth_for(path_of(i)), Frontier::kLongPathChunkBytes);
    }
    frontier.push_back(FrontierEntry{i, path_of(i)});
  }
  const std::size_t slot_chunks = (n + Frontier::kChunk - 1) / Frontier::kChunk;
  EXPECT_EQ(frontier.bytes(), slot_chunks * Frontier::kSlotChunkBytes + 3 * Frontier::kLongPathChunkBytes);
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(frontier[i].path, path_of(i)) << i;
  frontier.truncate(kPerChunk);  // the first chunk of codes is all the kept entries need
  EXPECT_EQ(frontier.bytes(), Frontier::kSlotChunkBytes + Frontier::kLongPathChunkBytes);
  frontier.push_back(FrontierEntry{0, path_of(5)});
  EXPECT_EQ(frontier[kPerChunk].path, path_of(5));
  EXPECT_EQ(frontier[kPerChunk - 1].path, path_of(kPerChunk - 1));
}

}  // namespace
}  // namespace fp8sm::explorer
