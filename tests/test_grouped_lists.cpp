// statemachine/storage.hpp's grouped lists (a checkpoint's stashed runs, the histories its
// forward saw): insert_grouped must leave a list as a stable sort by key of everything added
// so far would, whatever the order and size of the batches, in both storages; group_of must
// find exactly a key's entries.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
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
    for (std::size_t i = 0; i < expected.size(); ++i) {
      ASSERT_EQ(list[i].key, expected[i].key) << "seed " << seed << " at " << i;
      ASSERT_EQ(list[i].order, expected[i].order) << "seed " << seed << " at " << i;
    }
    for (std::uint8_t k = 0; k < 7; ++k) {
      const auto [first, last] = statemachine::group_of(list, k, key_of);
      const auto count = std::count_if(expected.begin(), expected.end(), [&](const Entry& e) { return e.key == k; });
      ASSERT_EQ(last - first, count) << "key " << int{k};
      for (auto e = first; e != last; ++e) ASSERT_EQ(e->key, k);
    }
  }
}

TEST(GroupedLists, InsertGroupedIsAStableSortOfEverythingAdded) {
  for (std::uint32_t seed = 1; seed <= 20; ++seed) {
    check_against_a_stable_sort<std::vector<Entry>>(seed);
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

}  // namespace
}  // namespace fp8sm
