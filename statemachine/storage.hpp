// Where the model's lists live. Every list of the model's state (the machine's stacks, the
// driver's tape and ledger, the interpreter's blocks, the observers' records) is declared as
// `typename S::template List<T, Tag>` over a storage policy S:
//
//   GrowableStorage  std::vector: the runtime, `explorer run` and the tests, which may hold
//                    programs of any length;
//   FlatStorage      BoundedVector, a fixed-capacity array inside the value itself: the
//                    exhaustive search, whose states are trivially copyable values (a successor
//                    is a memcpy of its parent, a few events and a hash, and allocates nothing).
//
// A list kept grouped by a key (insert_grouped, below) is `typename S::template GroupedList<T,
// Tag, Key>`: in the flat state the same sorted list, in the growable storage a vector per key
// (grouped_table.hpp), so that a long program's groups grow without moving each other.
//
// A Tag names one list and gives its capacity in the flat state (kCapacity) and what it holds
// (kWhat), for the refusal when a program needs more. Ids and positions are `S::Id`: 32 bits
// for the growable storage, 8 for the flat one (whose ids are kept small: the search renames
// them by rank after each statement, explorer/model/canonical_state.hpp).
#pragma once

#include <fmt/core.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "statemachine/grouped_table.hpp"

namespace fp8sm::statemachine {

// A program needs more room than the flat state has: more entries in one list, or an id that
// does not fit. The exhaustive search sizes its capacities for the depths it accepts, so this
// is a refusal of the program (exit 2), never a wrong answer.
class CapacityError : public std::length_error {
 public:
  using std::length_error::length_error;
};

#define FP8SM_CAPACITY(NAME, CAPACITY, WHAT)              \
  struct NAME {                                           \
    static constexpr std::size_t kCapacity = (CAPACITY);  \
    static constexpr const char* kWhat = (WHAT);          \
  }

[[noreturn]] inline void capacity_exceeded(std::size_t capacity, const char* what) {
  throw CapacityError(fmt::format("the program needs more than {} {} in the model's fixed-capacity state", capacity, what));
}

// A vector of at most N elements of a trivially copyable T, stored inline. Slots at and past
// size() always hold T{}, so equal lists have equal bytes and a copy is a memcpy.
template <class T, std::size_t N, class Tag>
class BoundedVector {
  static_assert(std::is_trivially_copyable_v<T>, "the flat state is copied as bytes");
  static_assert(N > 0 && N <= 255, "sizes are one byte");

 public:
  using value_type = T;
  using iterator = T*;
  using const_iterator = const T*;
  static constexpr std::size_t kCapacity = N;

  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  static constexpr std::size_t capacity() { return N; }

  T& operator[](std::size_t i) { return items_[i]; }
  const T& operator[](std::size_t i) const { return items_[i]; }
  T& front() { return items_[0]; }
  const T& front() const { return items_[0]; }
  T& back() { return items_[size_ - 1]; }
  const T& back() const { return items_[size_ - 1]; }
  T* begin() { return items_; }
  T* end() { return items_ + size_; }
  const T* begin() const { return items_; }
  const T* end() const { return items_ + size_; }
  const T* data() const { return items_; }
  auto rbegin() { return std::make_reverse_iterator(end()); }
  auto rend() { return std::make_reverse_iterator(begin()); }
  auto rbegin() const { return std::make_reverse_iterator(end()); }
  auto rend() const { return std::make_reverse_iterator(begin()); }

  void push_back(const T& value) {
    if (size_ == N) capacity_exceeded(N, Tag::kWhat);
    items_[size_++] = value;
  }
  void pop_back() { items_[--size_] = T{}; }
  void clear() { resize(0); }
  void resize(std::size_t n, const T& value = T{}) {
    if (n > N) capacity_exceeded(N, Tag::kWhat);
    for (std::size_t i = size_; i < n; ++i) items_[i] = value;
    for (std::size_t i = n; i < size_ && i < N; ++i) items_[i] = T{};  // (i < N: for the compiler's bounds check)
    size_ = static_cast<std::uint8_t>(n);
  }
  T* erase(T* first, T* last) {
    T* kept_end = std::copy(last, end(), first);
    std::fill(kept_end, end(), T{});
    size_ = static_cast<std::uint8_t>(kept_end - items_);
    return first;
  }
  T* erase(T* at) { return erase(at, at + 1); }
  // Makes this list a copy of `from`, moving only the bytes of the slots either list uses: the
  // slots past both sizes hold T{} in each, so the result is the same bytes as `*this = from`.
  // A state's lists are long and mostly empty, and a successor is a copy of its parent: this
  // copies a few cache lines where the assignment copies the whole array. In 32-byte moves
  // that stay inside the array (the last may overlap the one before).
  void copy_used_from(const BoundedVector& from) {
    constexpr std::size_t kArray = sizeof items_;
    const std::size_t used = std::max(size_, from.size_) * sizeof(T);
    char* to_bytes = reinterpret_cast<char*>(items_);
    const char* from_bytes = reinterpret_cast<const char*>(from.items_);
    if constexpr (kArray <= 64) {
      std::memcpy(to_bytes, from_bytes, kArray);
    } else {
      for (std::size_t i = 0; i < used; i += 32) {
        const std::size_t at = std::min(i, kArray - 32);
        std::memcpy(to_bytes + at, from_bytes + at, 32);
      }
    }
    // The size and the bytes after it (the object's tail padding), so that the object's bytes
    // are the assignment's too.
    constexpr std::size_t kSizeOffset = sizeof items_;
    std::memcpy(reinterpret_cast<char*>(this) + kSizeOffset, reinterpret_cast<const char*>(&from) + kSizeOffset,
                sizeof(BoundedVector) - kSizeOffset);
  }
  void swap(BoundedVector& other) {
    BoundedVector kept = *this;
    *this = other;
    other = kept;
  }
  T* insert(T* at, const T& value) {
    if (size_ == N) capacity_exceeded(N, Tag::kWhat);
    const std::ptrdiff_t i = at - items_;
    std::copy_backward(items_ + i, end(), end() + 1);
    items_[i] = value;
    ++size_;
    return items_ + i;
  }

 private:
  T items_[N]{};
  std::uint8_t size_ = 0;
};

struct GrowableStorage {
  template <class T, class Tag>
  using List = std::vector<T>;
  // A list kept grouped by a key of type Key (insert_grouped, group_of): a vector per key.
  template <class T, class Tag, class Key>
  using GroupedList = GroupedTable<Key, T>;
  using Id = std::uint32_t;
  static constexpr bool kFlat = false;
};

struct FlatStorage {
  template <class T, class Tag>
  using List = BoundedVector<T, Tag::kCapacity, Tag>;
  // One list of tagged entries sorted by key, hashed and renamed as bytes.
  template <class T, class Tag, class Key>
  using GroupedList = List<T, Tag>;
  using Id = std::uint8_t;
  static constexpr bool kFlat = true;
};

// Lists kept grouped by a key, each group in insertion order (a checkpoint's stashed runs,
// the histories its original forward saw). `insert_grouped` adds `count` items, each after
// the entries of its key, in one pass from the back: every later entry moves once, where one
// insertion per item would move the tail once per item. A module inside k nested checkpoints
// adds k items at once, one per checkpoint; the items come in any order.
template <class List, class T, class Key>
void insert_grouped(List& list, const T* items, std::size_t count, Key key) {
  constexpr std::size_t kBatch = 64;
  for (; count > kBatch; items += kBatch, count -= kBatch) insert_grouped(list, items, kBatch, key);
  T sorted[kBatch];  // the items by key, equal keys in their order (an insertion sort: a few)
  for (std::size_t i = 0; i < count; ++i) {
    std::size_t j = i;
    for (; j > 0 && key(items[i]) < key(sorted[j - 1]); --j) sorted[j] = sorted[j - 1];
    sorted[j] = items[i];
  }
  std::size_t read = list.size();
  for (std::size_t i = 0; i < count; ++i) list.push_back(T{});  // room at the end (push_back checks the capacity)
  // From the last item back: the entries after the item's place move up by the items still to
  // place, in one block (found by binary search: the list is sorted by key).
  for (std::size_t j = count; j > 0; --j) {
    const auto k = key(sorted[j - 1]);
    const auto place = std::partition_point(list.begin(), list.begin() + static_cast<std::ptrdiff_t>(read),
                                            [&](const T& e) { return !(k < key(e)); });
    const auto at = static_cast<std::size_t>(place - list.begin());
    std::move_backward(place, list.begin() + static_cast<std::ptrdiff_t>(read),
                       list.begin() + static_cast<std::ptrdiff_t>(read + j));
    list[at + j - 1] = sorted[j - 1];
    read = at;
  }
}

// The group of `key_value` in a list kept by insert_grouped: [first, last).
template <class List, class KeyValue, class Key>
auto group_of(List& list, const KeyValue& key_value, Key key) {
  auto first = std::partition_point(list.begin(), list.end(), [&](const auto& e) { return key(e) < key_value; });
  auto last = std::partition_point(first, list.end(), [&](const auto& e) { return !(key_value < key(e)); });
  return std::make_pair(first, last);
}

// An id or position of the model stored in S::Id; kNone is "no id" (an unset position).
template <class S>
inline constexpr typename S::Id kNone = std::numeric_limits<typename S::Id>::max();

template <class S, class Value>
typename S::Id to_id(Value value) {
  static_assert(std::is_integral_v<Value>);
  if (value < 0 || static_cast<std::uint64_t>(value) >= kNone<S>) {
    throw CapacityError(fmt::format(
        "the program needs more than {} checkpoint, node or graph ids in the model's fixed-capacity state", kNone<S>));
  }
  return static_cast<typename S::Id>(value);
}

// A position (or kNone) as an int, for code that counts with -1 for "none".
template <class S>
int position_of(typename S::Id id) {
  return id == kNone<S> ? -1 : static_cast<int>(id);
}
template <class S>
typename S::Id id_of_position(int position) {
  return position < 0 ? kNone<S> : to_id<S>(position);
}

}  // namespace fp8sm::statemachine
