// statemachine/storage.hpp's grouped lists (a checkpoint's stashed runs, the histories its
// forward saw): insert_grouped must leave a list as a stable sort by key of everything added
// so far would, whatever the order and size of the batches, in both storages (the growable
// storage's GroupedList is a table of groups: each group as the sort has it); group_of must
// find exactly a key's entries.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <map>
#include <random>
#include <type_traits>
#include <vector>

#include "statemachine/storage.hpp"

namespace fp8sm {
namespace {

struct Entry {
  std::uint8_t key = 0;
  std::uint16_t order = 0;  // when it was added: tells a stable result from an unstable one
};
FP8SM_CAPACITY(TestEntries, 255, "test entries");

auto key_of = [](const Entry& e) { return e.key; };
using Table = statemachine::GrowableStorage::GroupedList<Entry, TestEntries, std::uint8_t>;

template <class List>
void check_against_a_stable_sort(std::uint32_t seed) {
  std::mt19937 random(seed);
  List list;
  std::vector<Entry> added;
  std::uint16_t order = 0;
  while (added.size() < 180) {  // at most 249: within the flat list's 255
    Entry batch[100];
    const std::size_t n = 1 + random() % 70;  // past 64 as well: the helper splits its batches
    for (std::size_t i = 0; i < n; ++i) batch[i] = Entry{static_cast<std::uint8_t>(random() % 6), order++};
    statemachine::insert_grouped(list, batch, n, key_of);
    added.insert(added.end(), batch, batch + n);
    std::vector<Entry> expected = added;
    std::stable_sort(expected.begin(), expected.end(), [](const Entry& a, const Entry& b) { return a.key < b.key; });
    ASSERT_EQ(list.size(), expected.size());
    if constexpr (!std::is_same_v<List, Table>) {  // one list: the sort, entry by entry
      for (std::size_t i = 0; i < expected.size(); ++i) {
        ASSERT_EQ(list[i].key, expected[i].key) << "seed " << seed << " at " << i;
        ASSERT_EQ(list[i].order, expected[i].order) << "seed " << seed << " at " << i;
      }
    }
    for (std::uint8_t k = 0; k < 7; ++k) {
      const auto [first, last] = statemachine::group_of(list, k, key_of);
      std::vector<Entry> of_key;
      std::copy_if(expected.begin(), expected.end(), std::back_inserter(of_key), [&](const Entry& e) { return e.key == k; });
      ASSERT_EQ(static_cast<std::size_t>(last - first), of_key.size()) << "key " << int{k};
      for (std::size_t i = 0; i < of_key.size(); ++i) {
        ASSERT_EQ(first[static_cast<std::ptrdiff_t>(i)].key, k);
        ASSERT_EQ(first[static_cast<std::ptrdiff_t>(i)].order, of_key[i].order) << "seed " << seed;
      }
    }
  }
}

TEST(GroupedLists, InsertGroupedIsAStableSortOfEverythingAdded) {
  for (std::uint32_t seed = 1; seed <= 20; ++seed) {
    check_against_a_stable_sort<std::vector<Entry>>(seed);
    check_against_a_stable_sort<Table>(seed);
    check_against_a_stable_sort<statemachine::BoundedVector<Entry, TestEntries::kCapacity, TestEntries>>(seed);
  }
}

TEST(GroupedLists, AFullFlatListRefusesTheBatch) {
  statemachine::BoundedVector<Entry, TestEntries::kCapacity, TestEntries> list;
  Entry batch[60];
  for (std::size_t i = 0; i < 60; ++i) batch[i] = Entry{static_cast<std::uint8_t>(i % 3), static_cast<std::uint16_t>(i)};
  for (int i = 0; i < 4; ++i) statemachine::insert_grouped(list, batch, 60, key_of);
  EXPECT_EQ(list.size(), 240u);
  EXPECT_THROW(statemachine::insert_grouped(list, batch, 60, key_of), statemachine::CapacityError);
}

// The growable form itself: each key's entries in order through every operation.
TEST(GroupedTable, EachKeyIsItsEntriesInOrder) {
  std::mt19937 random(5);
  statemachine::GroupedTable<std::uint32_t, int> table;
  std::map<std::uint32_t, std::vector<int>> reference;
  auto total = [&] {
    std::size_t n = 0;
    for (const auto& [key, entries] : reference) n += entries.size();
    return n;
  };
  for (int op = 0; op < 5000; ++op) {
    const auto key = static_cast<std::uint32_t>(random() % 8);
    switch (random() % 5) {
      case 0:
        if (!reference[key].empty()) {
          table.pop_front(key);
          reference[key].erase(reference[key].begin());
        }
        break;
      case 1:
        table.erase(key);
        reference[key].clear();
        break;
      default:
        table.push_back(key, op);
        reference[key].push_back(op);
    }
    ASSERT_EQ(table.size(), total());
    ASSERT_EQ(table.empty(), total() == 0);
    for (std::uint32_t k = 0; k < 9; ++k) {
      const auto& group = table.group(k);
      ASSERT_TRUE(std::equal(group.begin(), group.end(), reference[k].begin(), reference[k].end())) << "op " << op;
      ASSERT_EQ(group.size(), reference[k].size());
      if (!group.empty()) {
        ASSERT_EQ(group.front(), reference[k].front());
        ASSERT_EQ(group.back(), reference[k].back());
        ASSERT_EQ(group[group.size() / 2], reference[k][group.size() / 2]);
      }
    }
  }
}

}  // namespace
}  // namespace fp8sm
