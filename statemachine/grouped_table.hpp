// The growable storage's form of a table keyed by a checkpoint, a module or both (a checkpoint's
// stashed runs, the histories its forward saw, a module's stash deque).
//
// The flat state keeps such a table as one list of tagged entries (statemachine/storage.hpp:
// insert_grouped keeps it sorted by key), because it is hashed and renamed as bytes. There,
// adding an entry moves every entry of a later key, and dropping a key's entries or finding
// the k-th entry of a key scans the list: nothing in a list of a few dozen entries, O(N) per
// entry in a program of N statements, which made `explorer run` quadratic. Here each key has its
// own deque, in a map ordered by key: adding an entry, taking a key's k-th entry, popping its
// first and dropping a key or a range of keys touch those keys' entries alone, plus O(log K) for
// K keys to find them.
#pragma once

#include <cstddef>
#include <deque>
#include <map>
#include <utility>

namespace fp8sm::statemachine {

template <class Key, class T>
class GroupedTable {
 public:
  using value_type = T;
  using Group = std::deque<T>;

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
  // Drops the entries of every key in [first, last).
  void erase(const Key& first, const Key& last) {
    const auto begin = groups_.lower_bound(first), end = groups_.lower_bound(last);
    for (auto it = begin; it != end; ++it) size_ -= it->second.size();
    groups_.erase(begin, end);
  }
  // How many entries the keys in [first, last) have.
  std::size_t count(const Key& first, const Key& last) const {
    std::size_t n = 0;
    for (auto it = groups_.lower_bound(first); it != groups_.end() && it->first < last; ++it) n += it->second.size();
    return n;
  }

 private:
  static const Group& empty_group() {
    static const Group none;
    return none;
  }

  std::map<Key, Group> groups_;  // no empty group is kept
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
