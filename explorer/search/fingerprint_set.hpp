// The seen-set of the search: 80 bits of every state's fingerprint (the high word and the low
// 16 bits of the low word, model/fingerprint.hpp) in a compact table, where a slot's index
// carries what the slot does not store (Cleary's compact hashing, laid out as a rank-and-select
// quotient filter: Pandey, Bender, Johnson and Patro, SIGMOD 2017).
//
// A table of N homes sends a fingerprint to its home h = floor(high × N / 2^64): any N, not
// only powers of two, so the table can grow by a fifth. The high words whose home is h form an
// interval at most W = ceil(2^64 / N) wide, so the home and the low L bits of the high word
// (2^L ≥ W) give the high word back. A slot stores those L bits and the 16 bits of the low word:
// its remainder, L + 16 bits. Equal homes and equal remainders mean equal 80 bits, so two states
// are confused only when 80 bits of their fingerprints agree (the printed collision probability
// is n² / 2^81).
//
// The remainders of one home lie together, a run, and runs lie in the order of their homes, each
// at its home or after it (as in linear probing with Robin Hood order). What slot holds which
// home's remainders is not stored per slot but in two bits a slot and a byte per 64 slots:
//   - occupied, by home: some remainder has this home;
//   - run end, by slot: this slot holds the last remainder of its run;
//   - offset, by block of 64: how many slots from the block's first are taken by runs of homes
//     before the block.
// The k-th run end belongs to the k-th occupied home, so a home's run is found by counting
// (rank) the occupied homes before it in its block and finding (select) that many run ends from
// where the block's own runs start. A slot is empty when every run of a home at or before it
// ended before it. That is 2.125 bits a slot where a per-slot distance from the home took 7.
//
// Nothing wraps around: the table keeps some spare slots past the last home. It grows by a
// fifth when it is 90 % full (or as full as reserve() was told, up to 95 %), when an insertion
// would shift a run past the last slot, or when a block's offset would not fit its byte. It
// grows where it lies (TableBytes): its block is enlarged, the old remainders moved to its end,
// and the new table written from the front, run by run, behind where the old one is read
// (regrow_in_place). So growing holds the new table and the old metadata (a twenty-fifth of the
// old table), not both tables.
//
// The slot narrows as the table grows (L = 64 - log2 N, rounded up): 8.6 bytes a state at 10^6
// states 90 % full, 7.8 at 10^8, 7.2 at 10^9, 6.8 at 10^10 (docs/performance.md).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "explorer/model/fingerprint.hpp"
#include "explorer/search/table_bytes.hpp"

namespace fp8sm::explorer {

namespace fingerprint_layout {
struct TableView;  // fingerprint_layout.hpp
}  // namespace fingerprint_layout

class FingerprintSet {
 public:
  static constexpr int kLowBits = 16;                   // of the fingerprint's low word
  static constexpr int kEffectiveBits = 64 + kLowBits;  // what two fingerprints must share to be confused
  static constexpr std::size_t kBlockSlots = 64;        // slots (and homes) whose metadata lie together
  static constexpr std::uint32_t kMaxOffset = 255;      // a block's offset is one byte
  // Each block's metadata, together so that one probe reads one line (or two): its homes'
  // occupied bits, its slots' run-end bits, its offset.
  static constexpr std::size_t kMetadataBytes = 17;
  static constexpr std::size_t kOffsetAt = 16;

  explicit FingerprintSet(std::size_t initial_slots = 1024);

  // The chance that two of `n` distinct states share the kEffectiveBits the set keeps, so that
  // the second is taken for the first: at most n² / 2^(kEffectiveBits + 1) (the birthday bound).
  static double collision_probability(double n) {
    return std::min(1.0, n * n / std::ldexp(1.0, kEffectiveBits + 1));
  }

  // True if `fingerprint` was not in the set (it is now).
  bool insert(const Fingerprint& fingerprint);
  bool contains(const Fingerprint& fingerprint) const;
  // Every fingerprint kept (its 80 bits: the low word's others zero), in the table's order,
  // which is the order a growth inserts them into the grown table in.
  std::vector<Fingerprint> fingerprints() const;
  // Asks the cache for the metadata and the slots where `fingerprint` would go, ahead of its
  // insert.
  void prefetch(const Fingerprint& fingerprint) const {
    const std::size_t h = home(fingerprint.high);
    const std::size_t block = h / kBlockSlots;
    __builtin_prefetch(bytes_.data() + block * kMetadataBytes);
    __builtin_prefetch(bytes_.data() + block * kMetadataBytes + kOffsetAt);
    __builtin_prefetch(bytes_.data() + remainders_at_ + (h * static_cast<std::size_t>(width_) >> 3));
  }
  // The table grows when it is kUsualLoad full. A table reserved for a known count may be
  // filled up to kFullestLoad (a search's last layer under a memory budget, where its memory
  // peaks): past 90 % a run shifts about four times as far on insertion, and probes read more.
  static constexpr double kUsualLoad = 0.9;
  static constexpr double kFullestLoad = 0.95;
  // Grows the table once so that `n` fingerprints fit without growing again, `load` full with
  // them (the search knows about how many states a layer adds: one growth instead of one per
  // fifth). Its next growth, if more come, is by a fifth as usual.
  void reserve(std::size_t n, double load = kUsualLoad);
  // The bytes the table would hold after reserve(n, load).
  std::size_t bytes_for(std::size_t n, double load = kUsualLoad) const;
  // How many fingerprints the table holds before it grows.
  std::size_t capacity() const { return limit_; }
  // The most the table holds while reserve(n, load) is under way: the reserved table and a copy
  // of this one's metadata, or this table if it holds `n` as it is.
  std::size_t bytes_while_reserving(std::size_t n, double load = kUsualLoad) const;
  // The most fingerprints a table reserved `load` full holds, if reserving it may take no more
  // than `bytes` (bytes_while_reserving): at least size().
  std::size_t most_within(std::size_t bytes, double load = kUsualLoad) const;

  std::size_t size() const { return size_; }
  std::size_t bytes() const { return bytes_.size(); }
  // How many times the table grew, and how many of those where it lies (the others copied it
  // into a new block: the grown table would not have held its fingerprints as they lay).
  std::size_t growths() const { return growths_; }
  std::size_t growths_in_place() const { return growths_in_place_; }
  // The most the table holds while the growth by a fifth that the next insertion past full
  // makes is under way: the grown table, and a copy of the old one's metadata.
  std::size_t bytes_while_growing() const;
  // Whether the next insertion of a new fingerprint makes the table grow (at 90 %; an
  // insertion that would shift a run too far grows it earlier).
  bool full() const { return size_ + 1 > limit_; }

  // The table itself, and a table put back from it (a search's snapshot): the same slots, so
  // the same fingerprints in the same places. assign throws std::invalid_argument for bytes
  // that no table of `home_slots` homes could hold.
  std::size_t home_slots() const { return homes_; }
  const TableBytes& table_bytes() const { return bytes_; }
  void assign(std::size_t home_slots, TableBytes bytes);
  void assign(std::size_t home_slots, const std::vector<std::uint8_t>& bytes) { assign(home_slots, TableBytes(bytes)); }

 private:
  // A remainder: the high word's low L bits, then the low word's kLowBits.
  __extension__ typedef unsigned __int128 Key;  // g++ and clang

  // Where a probe for a key ends: found, or where the key would go (`at`) and whether its home
  // has a run already (the key then goes at that run's end).
  struct Probe {
    bool found = false;
    bool home_has_run = false;
    std::size_t at = 0;
  };

  std::size_t home(std::uint64_t high) const {
    return static_cast<std::size_t>((static_cast<Key>(high) * homes_) >> 64);
  }
  Key stored_key(const Fingerprint& fingerprint) const;

  std::uint64_t metadata_word(std::size_t block, int which) const {  // 0: occupied, 1: run ends
    std::uint64_t word;
    std::memcpy(&word, bytes_.data() + block * kMetadataBytes + static_cast<std::size_t>(which) * 8, sizeof word);
    return word;
  }
  void set_metadata_word(std::size_t block, int which, std::uint64_t word) {
    std::memcpy(bytes_.data() + block * kMetadataBytes + static_cast<std::size_t>(which) * 8, &word, sizeof word);
  }
  std::uint64_t occupieds(std::size_t block) const { return metadata_word(block, 0); }
  std::uint64_t run_ends(std::size_t block) const { return metadata_word(block, 1); }
  bool run_end(std::size_t i) const { return (run_ends(i / kBlockSlots) >> (i % kBlockSlots)) & 1u; }
  void set_bit(int which, std::size_t i, bool value);
  std::uint32_t offset(std::size_t block) const { return bytes_[block * kMetadataBytes + kOffsetAt]; }
  Key remainder(std::size_t i) const;
  void set_remainder(std::size_t i, Key key);

  // Slots first .. last-1 one up (their remainders, and their run-end bits); slot `last` is empty.
  void shift_remainders_up(std::size_t first, std::size_t last);
  void shift_run_ends_up(std::size_t first, std::size_t last);
  // The position of the `d`-th (from 1) run end at or after slot `from`.
  std::size_t select_run_end(std::size_t from, unsigned d) const;
  // The occupied homes in (after, upto].
  std::size_t occupied_between(std::size_t after, std::size_t upto) const;
  Probe probe(std::size_t h, Key key) const;
  // Puts a key not in the table where `probe` says, shifting what follows up to the next empty
  // slot. False, changing nothing, if the table must grow first.
  bool place_at(std::size_t h, const Probe& probe, Key key);
  // Puts a fingerprint not in the table; grows if it must, for a table of `count` fingerprints.
  void place(const Fingerprint& fingerprint, std::size_t count);
  // By a fifth; throws std::length_error if `count` fingerprints filled so many homes so early.
  void grow(std::size_t count);
  void rehash(std::size_t homes, std::size_t count);
  // The most the table holds while it grows to `homes` homes (where it lies: the grown table and
  // a copy of the old metadata), or this table if it has as many.
  std::size_t bytes_while_growing_to(std::size_t homes) const;
  // The same table of `homes` homes as rehash makes, built in this table's own block. False,
  // changing nothing, where it cannot be: the new table's metadata would reach the old
  // remainders, or it would not hold these fingerprints as they lie (rehash then copies them
  // into a table that grows further). If memory runs out once the old table is taken apart (only
  // for runs far longer than a hash makes), the table is left empty and the exception goes on.
  bool regrow_in_place(std::size_t homes);
  // Where this table's metadata and remainders lie, for reading its runs.
  fingerprint_layout::TableView table_view() const;
  // Calls visit(fingerprint) for every fingerprint in the table (its 80 bits), in slot order.
  template <class Visit>
  void for_each(Visit&& visit) const;
  // Calls visit(home, first slot, last slot) for each run, in order; false from visit stops it.
  // False if the metadata do not make runs (a run end missing, or one too many).
  template <class Visit>
  bool for_each_run(Visit&& visit) const;
  void shape(std::size_t homes);  // sizes the fields and bytes for `homes` homes (all empty)
  void size_fields(std::size_t homes);  // the fields alone, for bytes that come from elsewhere

  std::size_t homes_ = 0;
  std::size_t blocks_ = 0;
  std::size_t slots_ = 0;  // blocks_ × kBlockSlots: the homes, and spare slots past them
  int high_bits_ = 0;      // L
  int width_ = 0;          // bits a remainder
  Key high_mask_ = 0;      // L ones
  Key slot_mask_ = 0;      // width_ ones
  std::size_t remainders_at_ = 0;  // where the slots' remainders start
  TableBytes bytes_;
  std::size_t size_ = 0;
  std::size_t limit_ = 0;  // grow past this many
  std::size_t growths_ = 0;
  std::size_t growths_in_place_ = 0;
};

}  // namespace fp8sm::explorer
