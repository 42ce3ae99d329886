// The seen-set of the search: 80 bits of every state's fingerprint (the high word and the low
// 16 bits of the low word, model/fingerprint.hpp) in a compact table, where a slot's index
// carries what the slot does not store (Cleary's compact hashing, with Robin Hood order).
//
// A table of N slots sends a fingerprint to its home slot h = floor(high × N / 2^64): any N,
// not only powers of two, so the table can grow by a fifth. The high words whose home is h
// form an interval at most W = ceil(2^64 / N) wide, so the home and the low L bits of the high
// word (2^L ≥ W) give the high word back. A slot stores those L bits, the 16 bits of the low
// word and, in kDistanceBits, how far it lies past its home: L + 16 + 7 bits, packed one after
// the other. Equal homes and equal stored bits mean equal 80 bits, so two states are confused
// only when 80 bits of their fingerprints agree (the printed collision probability is
// n² / 2^81).
//
// The slots of one home lie together, and homes in order (Robin Hood: a fingerprint that
// probes past a slot whose home is later is not in the table, and an insertion shifts the rest
// of its cluster up by one). Nothing wraps around: a slot's distance is at most kMaxDistance,
// and the table holds that many slots past the last home. The table grows by a fifth when it
// is 90 % full, or when an insertion would push a slot past kMaxDistance.
//
// The slot narrows as the table grows (L = 64 - log2 N, rounded up): 9.3 bytes a state at 10^6
// states 90 % full, 8.5 at 10^8, 7.9 at 10^9, 7.5 at 10^10 (docs/performance.md).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "explorer/model/fingerprint.hpp"

namespace fp8sm::explorer {

class FingerprintSet {
 public:
  static constexpr int kLowBits = 16;                 // of the fingerprint's low word
  static constexpr int kEffectiveBits = 64 + kLowBits;  // what two fingerprints must share to be confused
  static constexpr int kDistanceBits = 7;
  static constexpr std::uint32_t kMaxDistance = (1u << kDistanceBits) - 2;  // 0 marks an empty slot

  explicit FingerprintSet(std::size_t initial_slots = 1024);

  // The chance that two of `n` distinct states share the kEffectiveBits the set keeps, so that
  // the second is taken for the first: at most n² / 2^(kEffectiveBits + 1) (the birthday bound).
  static double collision_probability(double n) {
    return std::min(1.0, n * n / std::ldexp(1.0, kEffectiveBits + 1));
  }

  // True if `fingerprint` was not in the set (it is now).
  bool insert(const Fingerprint& fingerprint);
  bool contains(const Fingerprint& fingerprint) const;
  // Asks the cache for the slot where `fingerprint` would go, ahead of its insert.
  void prefetch(const Fingerprint& fingerprint) const {
    __builtin_prefetch(bytes_.data() + (home(fingerprint.high) * static_cast<std::size_t>(width_) >> 3));
  }
  // Grows the table once so that `n` fingerprints fit without growing again (the search knows
  // about how many states a layer adds: one growth instead of one per fifth).
  void reserve(std::size_t n);
  // The bytes the table would hold after reserve(n).
  std::size_t bytes_for(std::size_t n) const;

  std::size_t size() const { return size_; }
  std::size_t bytes() const { return bytes_.size(); }
  // The bytes the table will hold after the insertion that makes it grow next.
  std::size_t bytes_after_growth() const;
  // Whether the next insertion of a new fingerprint makes the table grow (at 90 %; an
  // insertion that would push a slot too far grows it earlier).
  bool full() const { return size_ + 1 > limit_; }

  // The table itself, and a table put back from it (a search's snapshot): the same slots, so
  // the same fingerprints in the same places. assign throws std::invalid_argument for bytes
  // that no table of `home_slots` homes could hold.
  std::size_t home_slots() const { return homes_; }
  const std::vector<std::uint8_t>& table_bytes() const { return bytes_; }
  void assign(std::size_t home_slots, std::vector<std::uint8_t> bytes);

 private:
  // What a slot holds, unpacked: its bits past the home (the high word's low L bits, then the
  // low word's kLowBits) and its distance from the home plus one (0: empty).
  __extension__ typedef unsigned __int128 Key;  // g++ and clang
  struct Slot {
    Key key = 0;
    std::uint32_t distance = 0;
  };

  std::size_t home(std::uint64_t high) const {
    return static_cast<std::size_t>((static_cast<Key>(high) * homes_) >> 64);
  }
  Key stored_key(const Fingerprint& fingerprint) const;
  Slot get(std::size_t i) const;
  void put(std::size_t i, const Slot& slot);
  // Where a new key of home `h` goes (its distance in `distance`), or kFound if it is there.
  static constexpr std::size_t kFound = ~std::size_t{0};
  std::size_t find(std::size_t h, Key key, std::uint32_t& distance) const;
  // Puts a key not in the table at `i`, `distance` past its home, shifting its cluster up.
  // False, changing nothing, if a shifted slot would go past kMaxDistance.
  bool place_at(std::size_t i, Key key, std::uint32_t distance);
  // Puts a fingerprint not in the table; grows if it must, for a table of `count` fingerprints.
  void place(const Fingerprint& fingerprint, std::size_t count);
  // By a fifth; throws std::length_error if `count` fingerprints filled so many homes so early.
  void grow(std::size_t count);
  void rehash(std::size_t homes, std::size_t count);
  // Calls visit(fingerprint) for every fingerprint in the table (its 80 bits), in slot order.
  template <class Visit>
  void for_each(Visit&& visit) const;
  void shape(std::size_t homes);  // sizes the fields and bytes for `homes` homes (all empty)
  void size_fields(std::size_t homes);  // the fields alone, for bytes that come from elsewhere

  std::size_t homes_ = 0;
  std::size_t slots_ = 0;  // homes_ + kMaxDistance, and one more that stays empty
  int high_bits_ = 0;      // L
  int width_ = 0;          // bits a slot
  Key high_mask_ = 0;      // L ones
  Key slot_mask_ = 0;      // width_ ones
  std::vector<std::uint8_t> bytes_;
  std::size_t size_ = 0;
  std::size_t limit_ = 0;  // grow past this many
};

}  // namespace fp8sm::explorer
