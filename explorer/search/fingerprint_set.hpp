// The seen-set of the search: 64-bit state fingerprints in one flat open-addressing table
// (linear probing), 8 bytes a slot and nothing else, as SPIN's and TLC's fingerprint sets.
//
// The table grows by a fifth when it is 90 % full, so it holds between 8.9 and 10.7 bytes
// per stored fingerprint; slots are found by multiply-shift on the fingerprint (any table size
// works, not only powers of two). Fingerprint 0 marks an empty slot: a real 0 is stored as 1
// (one more collision pair in 2^64, counted in the printed collision probability's order).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace fp8sm::explorer {

class FingerprintSet {
 public:
  explicit FingerprintSet(std::size_t initial_slots = 1024);

  // True if `fingerprint` was not in the set (it is now).
  bool insert(std::uint64_t fingerprint);
  // Asks the cache for the slot where `fingerprint` would go, ahead of its insert.
  void prefetch(std::uint64_t fingerprint) const { __builtin_prefetch(&slots_[home(stored(fingerprint))]); }
  // Grows the table once so that `n` fingerprints fit without growing again (the search knows
  // about how many states a layer adds: one growth instead of one per fifth).
  void reserve(std::size_t n);
  // The bytes the table would hold after reserve(n).
  std::size_t bytes_for(std::size_t n) const;
  bool contains(std::uint64_t fingerprint) const;

  std::size_t size() const { return size_; }
  std::size_t bytes() const { return slots_.size() * sizeof(std::uint64_t); }
  // The bytes the table will hold after the insertion that makes it grow next.
  std::size_t bytes_after_growth() const;
  // Whether the next insertion of a new fingerprint makes the table grow.
  bool full() const { return size_ + 1 > limit_; }

  // The table itself, and a table put back from it (a search's snapshot): the same slots, so
  // the same fingerprints in the same places. Throws std::invalid_argument for slots that no
  // table of this kind could hold (too few, or fuller than it lets itself get).
  const std::vector<std::uint64_t>& slots() const { return slots_; }
  void assign_slots(std::vector<std::uint64_t> slots);

 private:
  static std::uint64_t stored(std::uint64_t fingerprint) { return fingerprint == 0 ? 1 : fingerprint; }
  std::size_t home(std::uint64_t fingerprint) const;
  void place(std::uint64_t value);
  void grow();
  void rehash(std::size_t slots);

  std::vector<std::uint64_t> slots_;
  std::size_t size_ = 0;
  std::size_t limit_ = 0;  // grow past this many
};

}  // namespace fp8sm::explorer
