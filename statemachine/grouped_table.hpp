// The growable storage's form of a table keyed by a checkpoint, a module or both (a checkpoint's
// stashed runs, the histories its forward saw, a module's stash deque).
//
// The flat state keeps such a table as one list of tagged entries (statemachine/storage.hpp:
// insert_grouped keeps it sorted by key), because it is hashed and renamed as bytes. There,
// adding an entry moves every entry of a later key, and dropping a key's entries or finding
// the k-th entry of a key scans the list: nothing in a list of a few dozen entries, O(N) per
// entry in a program of N statements, which made `explorer run` quadratic. Here each key has its
// own group, in a hash table: adding an entry, taking a key's k-th entry, popping its first and
// dropping a key touch that key's entries alone. (A std::map cost more than the lists it
// replaced in small programs: its walk down the tree mispredicts a branch a level; nothing here
// needs the keys in order.)
#pragma once

#include <cstddef>
#include <unordered_map>
#include <utility>
#include <vector>

namespace fp8sm::statemachine {

// One key's entries, oldest first: a vector and the number of entries popped from its front
// (dropped from the vector once they are half of it). Not a std::deque, whose first entry
// allocates half a kilobyte: tables of nested checkpoints hold thousands of small groups.
template <class T>
class KeyGroup {
 public:
  using const_iterator = typename std::vector<T>::const_iterator;
  std::size_t size() const { return entries_.size() - head_; }
  bool empty() const { return size() == 0; }
  const_iterator begin() const { return entries_.begin() + static_cast<std::ptrdiff_t>(head_); }
  const_iterator end() const { return entries_.end(); }
  const T& operator[](std::size_t i) const { return entries_[head_ + i]; }
  const T& front() const { return entries_[head_]; }
  const T& back() const { return entries_.back(); }

  void push_back(const T& value) { entries_.push_back(value); }
  void pop_front() {
    if (++head_ * 2 < entries_.size()) return;
    entries_.erase(entries_.begin(), entries_.begin() + static_cast<std::ptrdiff_t>(head_));
    head_ = 0;
  }

 private:
  std::vector<T> entries_;
  std::size_t head_ = 0;
};

template <class Key, class T>
class GroupedTable {
 public:
  using value_type = T;
  using Group = KeyGroup<T>;

  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  void push_back(const Key& key, const T& value) {
    groups_[key].push_back(value);
    ++size_;
  }
  // The entries of `key`, in the order they were added (an empty group if none).
  const Group& group(const Key& key) const {
    const auto it = groups_.find(key);
    return it == groups_.end() ? empty_group() : it->second;
  }
  // Drops the entries of `key`.
  void erase(const Key& key) {
    const auto it = groups_.find(key);
    if (it == groups_.end()) return;
    size_ -= it->second.size();
    groups_.erase(it);
  }
  // Drops the oldest entry of `key`, which has one.
  void pop_front(const Key& key) {
    const auto it = groups_.find(key);
    it->second.pop_front();
    --size_;
    if (it->second.empty()) groups_.erase(it);
  }

 private:
  static const Group& empty_group() {
    static const Group none;
    return none;
  }

  std::unordered_map<Key, Group> groups_;  // no empty group is kept; never iterated (its order is not ours)
  std::size_t size_ = 0;
};

// storage.hpp's grouped-list operations on a GroupedTable, so that code written once for both
// storages keeps a list grouped by insert_grouped and reads a group by group_of.
template <class K, class T, class Key>
void insert_grouped(GroupedTable<K, T>& table, const T* items, std::size_t count, Key key) {
  for (std::size_t i = 0; i < count; ++i) table.push_back(key(items[i]), items[i]);
}
template <class K, class T, class KeyValue, class Key>
auto group_of(const GroupedTable<K, T>& table, const KeyValue& key_value, Key) {
  const auto& group = table.group(static_cast<K>(key_value));
  return std::make_pair(group.begin(), group.end());
}
template <class K, class T, class KeyValue, class Key>
auto group_of(GroupedTable<K, T>& table, const KeyValue& key_value, Key key) {
  return group_of(static_cast<const GroupedTable<K, T>&>(table), key_value, key);
}

}  // namespace fp8sm::statemachine
