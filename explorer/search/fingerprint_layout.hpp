// The layout of the seen-set's table (fingerprint_set.hpp), shared by its two sources: the
// table itself (fingerprint_set.cpp) and its growth where it lies (fingerprint_set_growth.cpp).
// What a table of N homes keeps where, how its runs are read from its metadata, and how a
// slot's remainder gives its fingerprint back. Not for use outside those two.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "explorer/model/fingerprint.hpp"
#include "explorer/search/fingerprint_set.hpp"

namespace fp8sm::explorer::fingerprint_layout {

__extension__ typedef unsigned __int128 Wide;  // g++ and clang

constexpr double kMaxLoad = FingerprintSet::kUsualLoad;
constexpr double kGrowth = 1.2;
constexpr std::size_t kMinHomes = 16;
// Slots past the last home, for the runs of the last homes (a run never wraps around).
constexpr std::size_t kSpareSlots = 128;
constexpr std::size_t kPadding = sizeof(Wide);  // a remainder is read as the 16 bytes from its first
constexpr std::size_t kBlock = FingerprintSet::kBlockSlots;

inline std::size_t limit_for(std::size_t homes) { return static_cast<std::size_t>(static_cast<double>(homes) * kMaxLoad); }
inline std::size_t homes_for(std::size_t n, double load = kMaxLoad) {
  return std::max(kMinHomes, static_cast<std::size_t>(static_cast<double>(n) / load) + 1);
}
inline std::size_t blocks_for(std::size_t homes) { return (homes + kSpareSlots + kBlock - 1) / kBlock; }

// L: the bits of the high word a slot keeps, enough to tell apart the high words of one home
// (2^L ≥ ceil(2^64 / homes)).
inline int high_bits_for(std::size_t homes) {
  const Wide width = ((Wide{1} << 64) + homes - 1) / homes;
  int bits = 0;
  while ((Wide{1} << bits) < width) ++bits;
  return bits;
}

inline int width_for(std::size_t homes) { return high_bits_for(homes) + FingerprintSet::kLowBits; }

// The bytes: each block's metadata (to a multiple of 8), then the remainders, packed.
inline std::size_t remainders_at_for(std::size_t homes) {
  return (blocks_for(homes) * FingerprintSet::kMetadataBytes + 7) / 8 * 8;
}
inline std::size_t bytes_of(std::size_t homes) {
  const std::size_t slots = blocks_for(homes) * kBlock;
  return remainders_at_for(homes) + (slots * static_cast<std::size_t>(width_for(homes)) + 7) / 8 + kPadding;
}

inline Wide ones(int bits) { return bits >= 128 ? ~Wide{0} : (Wide{1} << bits) - 1; }

// The first high word of each home, ceil(h × 2^64 / homes), home after home without a division:
// 2^64 = q × homes + r, so it is h × q + ceil(h × r / homes), whose fraction steps by r.
class HomeStarts {
 public:
  explicit HomeStarts(std::size_t homes)
      : homes_(homes),
        step_(static_cast<std::uint64_t>((Wide{1} << 64) / homes)),
        rest_(static_cast<std::uint64_t>((Wide{1} << 64) % homes)) {}
  // Homes come in order, never back.
  std::uint64_t start_of(std::size_t h) {
    for (; at_ < h; ++at_) {
      fraction_ += rest_;
      if (fraction_ >= homes_) {
        fraction_ -= homes_;
        ++whole_;
      }
    }
    return static_cast<std::uint64_t>(h) * step_ + whole_ + (fraction_ != 0 ? 1 : 0);
  }

 private:
  std::uint64_t homes_, step_, rest_;
  std::size_t at_ = 0;
  std::uint64_t whole_ = 0, fraction_ = 0;  // h × rest_ = whole_ × homes_ + fraction_
};

// Where a table's metadata and remainders lie, and its shape: what reading its runs needs. They
// lie in the table's own block, or, while it grows in place, where the growth moved them.
struct TableView {
  const std::uint8_t* metadata;
  const std::uint8_t* remainders;
  std::size_t homes, blocks;
  int high_bits, width;

  std::uint64_t metadata_word(std::size_t block, std::size_t which) const {  // 0: occupied, 1: run ends
    std::uint64_t word;
    std::memcpy(&word, metadata + block * FingerprintSet::kMetadataBytes + which * 8, sizeof word);
    return word;
  }
  std::uint64_t occupieds(std::size_t block) const { return metadata_word(block, 0); }
  std::uint64_t run_ends(std::size_t block) const { return metadata_word(block, 1); }
  Wide remainder(std::size_t i) const {
    const std::size_t bit = i * static_cast<std::size_t>(width);
    Wide word;
    std::memcpy(&word, remainders + (bit >> 3), sizeof word);
    return (word >> (bit & 7)) & ones(width);
  }
  // The fingerprint in slot i, of a run whose home's first high word is `start`: the one high
  // word from there whose low L bits are the slot's.
  Fingerprint fingerprint(std::uint64_t start, std::size_t i) const {
    const Wide key = remainder(i);
    const auto high_mask = static_cast<std::uint64_t>(ones(high_bits));
    const auto low_bits = static_cast<std::uint64_t>(key) & high_mask;
    return Fingerprint{start + ((low_bits - start) & high_mask), static_cast<std::uint64_t>(key >> high_bits)};
  }
};

// Calls visit(home, first slot, last slot) for each run, in order; false from visit stops it.
// False if the metadata do not make runs (a run end missing, or one too many).
template <class Visit>
inline bool visit_runs(const TableView& table, Visit&& visit) {
  // The occupied homes in order and the run ends in order, side by side: the k-th run end
  // closes the k-th occupied home's run, which starts at its home or past the run before.
  std::size_t next_free = 0;  // the slot past the last run
  std::size_t end_block = 0;
  std::uint64_t ends = table.run_ends(0);
  for (std::size_t block = 0; block < table.blocks; ++block) {
    for (std::uint64_t homes = table.occupieds(block); homes != 0; homes &= homes - 1) {
      const std::size_t h = block * kBlock + static_cast<std::size_t>(__builtin_ctzll(homes));
      while (ends == 0) {
        if (++end_block == table.blocks) return false;  // a run without its end
        ends = table.run_ends(end_block);
      }
      const std::size_t end = end_block * kBlock + static_cast<std::size_t>(__builtin_ctzll(ends));
      ends &= ends - 1;
      const std::size_t start = std::max(h, next_free);
      if (end < start || h >= table.homes) return false;
      if (!visit(h, start, end)) return true;
      next_free = end + 1;
    }
  }
  while (ends == 0 && end_block + 1 < table.blocks) ends = table.run_ends(++end_block);
  return ends == 0;  // no run end left over
}

// The shape of a table of `homes` homes, as FingerprintSet::size_fields sets its fields.
struct Layout {
  explicit Layout(std::size_t table_homes)
      : homes(table_homes),
        blocks(blocks_for(table_homes)),
        slots(blocks * kBlock),
        high_bits(high_bits_for(table_homes)),
        width(width_for(table_homes)),
        remainders_at(remainders_at_for(table_homes)),
        bytes(bytes_of(table_homes)) {}
  std::size_t home(std::uint64_t high) const { return static_cast<std::size_t>((Wide{high} * homes) >> 64); }
  Wide key(const Fingerprint& fingerprint) const {
    return (Wide{fingerprint.high} & ones(high_bits)) | (Wide{fingerprint.low & 0xFFFFu} << high_bits);
  }

  std::size_t homes, blocks, slots;
  int high_bits, width;
  std::size_t remainders_at, bytes;
};

}  // namespace fp8sm::explorer::fingerprint_layout
