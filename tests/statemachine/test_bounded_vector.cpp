// statemachine/storage.hpp's BoundedVector: copy_used_from moves only the slots either list
// uses, and must leave exactly the bytes an assignment would, whatever the two sizes (the
// slots past a list's size hold T{}: the copy relies on it, and so do equal states' equal bytes).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>

#include "statemachine/storage.hpp"

namespace fp8sm {
namespace {

struct Wide {  // 12 bytes: slots that straddle the copy's 32-byte moves
  std::uint32_t a = 0, b = 0, c = 0;
};
FP8SM_CAPACITY(ManyWide, 40, "wide test entries");   // 480 bytes: the copy's loop
FP8SM_CAPACITY(FewBytes, 24, "narrow test entries");  // 24 bytes: one move of the whole array

template <class List, class Make>
List filled(std::size_t n, std::mt19937& random, Make make) {
  List list;
  // Grown past n and shrunk back by both ways a list shrinks, so that the slots it leaves are
  // the ones the copy must not carry over.
  const std::size_t over = std::min(List::capacity(), n + random() % 4);
  for (std::size_t i = 0; i < over; ++i) list.push_back(make(random));
  if (over > n) list.erase(list.begin() + static_cast<std::ptrdiff_t>(n), list.end() - 1);
  while (list.size() > n) list.pop_back();
  return list;
}

template <class List, class Make>
void check_every_pair_of_sizes(Make make) {
  std::mt19937 random(7);
  for (std::size_t from_size = 0; from_size <= List::capacity(); ++from_size) {
    for (std::size_t to_size = 0; to_size <= List::capacity(); ++to_size) {
      const List from = filled<List>(from_size, random, make);
      List to = filled<List>(to_size, random, make);
      to.copy_used_from(from);
      ASSERT_EQ(to.size(), from_size);
      ASSERT_EQ(std::memcmp(&to, &from, sizeof to), 0) << "from " << from_size << " slots over " << to_size;
    }
  }
}

TEST(BoundedVector, CopyingTheUsedSlotsLeavesTheAssignmentsBytes) {
  check_every_pair_of_sizes<statemachine::BoundedVector<Wide, ManyWide::kCapacity, ManyWide>>([](std::mt19937& r) {
    return Wide{static_cast<std::uint32_t>(r()) | 1u, static_cast<std::uint32_t>(r()), static_cast<std::uint32_t>(r())};
  });
  check_every_pair_of_sizes<statemachine::BoundedVector<std::uint8_t, FewBytes::kCapacity, FewBytes>>(
      [](std::mt19937& r) { return static_cast<std::uint8_t>(r() | 1u); });
}

}  // namespace
}  // namespace fp8sm
