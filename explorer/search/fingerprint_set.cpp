#include "explorer/search/fingerprint_set.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <stdexcept>

namespace fp8sm::explorer {

namespace {
__extension__ typedef unsigned __int128 Wide;  // g++ and clang

constexpr double kMaxLoad = 0.9;
constexpr double kGrowth = 1.2;
constexpr std::size_t kMinHomes = 16;
// Slots past the last home, for the runs of the last homes (a run never wraps around).
constexpr std::size_t kSpareSlots = 128;
constexpr std::size_t kPadding = sizeof(Wide);  // a remainder is read as the 16 bytes from its first
// Fingerprints that may wait to be written while a table grows where it lies, without allocating.
constexpr std::size_t kWaitingReserved = 4096;
constexpr std::size_t kBlock = FingerprintSet::kBlockSlots;

std::size_t limit_for(std::size_t homes) { return static_cast<std::size_t>(static_cast<double>(homes) * kMaxLoad); }
std::size_t homes_for(std::size_t n) { return std::max(kMinHomes, static_cast<std::size_t>(static_cast<double>(n) / kMaxLoad) + 1); }
std::size_t blocks_for(std::size_t homes) { return (homes + kSpareSlots + kBlock - 1) / kBlock; }

// L: the bits of the high word a slot keeps, enough to tell apart the high words of one home
// (2^L ≥ ceil(2^64 / homes)).
int high_bits_for(std::size_t homes) {
  const Wide width = ((Wide{1} << 64) + homes - 1) / homes;
  int bits = 0;
  while ((Wide{1} << bits) < width) ++bits;
  return bits;
}

int width_for(std::size_t homes) { return high_bits_for(homes) + FingerprintSet::kLowBits; }

// The bytes: each block's metadata (to a multiple of 8), then the remainders, packed.
std::size_t remainders_at_for(std::size_t homes) {
  return (blocks_for(homes) * FingerprintSet::kMetadataBytes + 7) / 8 * 8;
}
std::size_t bytes_of(std::size_t homes) {
  const std::size_t slots = blocks_for(homes) * kBlock;
  return remainders_at_for(homes) + (slots * static_cast<std::size_t>(width_for(homes)) + 7) / 8 + kPadding;
}

Wide ones(int bits) { return bits >= 128 ? ~Wide{0} : (Wide{1} << bits) - 1; }
std::uint64_t bits_below(std::size_t i) { return i >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << i) - 1; }
constexpr std::uint64_t kOnes = 0x0101010101010101ull;  // one in each byte
// Each byte of `word` replaced by its set bits.
std::uint64_t byte_counts(std::uint64_t word) {
  word = word - ((word >> 1) & 0x5555555555555555ull);
  word = (word & 0x3333333333333333ull) + ((word >> 2) & 0x3333333333333333ull);
  return (word + (word >> 4)) & 0x0F0F0F0F0F0F0F0Full;
}
// Without -mpopcnt, __builtin_popcountll is a call into libgcc; this is a dozen instructions inline.
unsigned popcount(std::uint64_t word) { return static_cast<unsigned>((byte_counts(word) * kOnes) >> 56); }

// The position of the k-th (from 0) set bit of one byte, for each byte and k.
constexpr std::array<std::array<std::uint8_t, 8>, 256> kSelectInByte = [] {
  std::array<std::array<std::uint8_t, 8>, 256> table{};
  for (unsigned byte = 0; byte < 256; ++byte) {
    unsigned k = 0;
    for (unsigned bit = 0; bit < 8; ++bit) {
      if ((byte >> bit) & 1u) table[byte][k++] = static_cast<std::uint8_t>(bit);
    }
  }
  return table;
}();

// The position of the k-th (from 0) set bit of `word`, which has more than k (without BMI2's
// pdep, which some machines microcode): the bytes' running counts side by side, the byte where
// they pass k, then the bit within it.
unsigned select_in_word(std::uint64_t word, unsigned k) {
  constexpr std::uint64_t kHigh = 0x8080808080808080ull;
  const std::uint64_t running = byte_counts(word) * kOnes;  // byte i: the set bits of bytes 0..i (at most 64)
  // The bytes whose running count is at most k: k + 128 - count keeps its high bit.
  const unsigned byte = popcount((((k * kOnes) | kHigh) - running) & kHigh);
  const unsigned before = byte == 0 ? 0 : static_cast<unsigned>(running >> (8 * (byte - 1))) & 0xFFu;
  return 8 * byte + kSelectInByte[(word >> (8 * byte)) & 0xFFu][k - before];
}

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
bool visit_runs(const TableView& table, Visit&& visit) {
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

// How far past its home the farthest fingerprint lies: the last of a run is the farthest of its
// home's, so the metadata alone say (a pass over a twenty-fifth of the table's bytes).
//
// Growing adds at most one to it, and so a table where it is below kSpareSlots grows with
// every run before the spare slots' end and every block's offset at most kSpareSlots (≤ 255).
// Take the new table's fingerprints in its order, e_i .. e_k, one cluster: consecutive slots
// from e_i's home h'_i, so e_k is at h'_i + m - 1 (m = k - i + 1), past its home by d' =
// h'_i + m - 1 - h'_k. In the old table the same m fingerprints have homes from h_i to h_k (homes
// follow the high words in both tables) and m slots at or past h_i, so one of them lies at
// h_i + m - 1 or past it, past its home (at most h_k) by d ≥ m - 1 - (h_k - h_i). Homes scaled
// by r = N'/N ≥ 1 and rounded down keep their differences but for one: h'_k - h'_i ≥ h_k - h_i - 1.
// So d' ≤ d + 1. A block's offset is at most the displacement of the fingerprint before it, and
// the last slot used is at most the last home plus the largest displacement.
std::size_t longest_displacement(const TableView& table) {
  std::size_t longest = 0;
  visit_runs(table, [&](std::size_t h, std::size_t, std::size_t last) {
    longest = std::max(longest, last - h);
    return true;
  });
  return longest;
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

// Writes a table from its fingerprints handed in the order of their homes: each home's run at
// the home or just past the run before, its remainders in the order handed, and every other
// bit zero. That is the table inserting them one by one into an empty table of that layout
// leaves. Without a block, it only checks that they fit: every slot before the spare slots'
// end, every block's offset within its byte (FingerprintSet::place_at's two refusals).
class SequentialBuild {
 public:
  SequentialBuild(const Layout& layout, std::uint8_t* block) : layout_(layout), block_(block) {}

  // Whether placing a fingerprint of home h writes no byte at or past `limit` of the block.
  bool writes_below(std::size_t h, std::size_t limit) const {
    const std::size_t slot = std::max(h, next_free_);
    const std::size_t end_bit = (slot + 1) * static_cast<std::size_t>(layout_.width);
    return layout_.remainders_at + (end_bit + 63) / 64 * 8 <= limit;
  }
  bool place(std::size_t h, Wide key) {
    if (h != home_) {
      if (home_ != kNoHome) set_bit(1, last_slot_);
      if (!set_offsets_upto(h / kBlock)) return false;
      set_bit(0, h);
      home_ = h;
    }
    const std::size_t slot = std::max(h, next_free_);
    if (slot >= layout_.slots) return false;
    if (block_ != nullptr) {
      append_zeros(slot * static_cast<std::size_t>(layout_.width) - (words_ * 64 + static_cast<std::size_t>(filled_)));
      append(static_cast<std::uint64_t>(key), std::min(layout_.width, 64));
      if (layout_.width > 64) append(static_cast<std::uint64_t>(key >> 64), layout_.width - 64);
    }
    next_free_ = slot + 1;
    last_slot_ = slot;
    return true;
  }
  // The last run's end, the offsets of the blocks past it, and zeros to the block's end.
  bool finish() {
    if (home_ != kNoHome) set_bit(1, last_slot_);
    if (!set_offsets_upto(layout_.blocks - 1)) return false;
    if (block_ != nullptr) {
      std::size_t at = layout_.remainders_at + 8 * words_;
      if (filled_ != 0) {
        std::memcpy(block_ + at, &pending_word_, sizeof pending_word_);
        at += 8;
      }
      std::memset(block_ + at, 0, layout_.bytes - at);
    }
    return true;
  }

 private:
  static constexpr std::size_t kNoHome = ~std::size_t{0};

  void set_bit(std::size_t which, std::size_t i) {
    if (block_ == nullptr) return;
    std::uint8_t* at = block_ + i / kBlock * FingerprintSet::kMetadataBytes + which * 8;
    std::uint64_t word;
    std::memcpy(&word, at, sizeof word);
    word |= std::uint64_t{1} << (i % kBlock);
    std::memcpy(at, &word, sizeof word);
  }
  // A block's offset: the slots from its first taken by the runs of homes before it, which are
  // all placed when the first home at or past it comes.
  bool set_offsets_upto(std::size_t last_block) {
    for (; offsets_set_ <= last_block; ++offsets_set_) {
      const std::size_t first = offsets_set_ * kBlock;
      const std::size_t offset = next_free_ > first ? next_free_ - first : 0;
      if (offset > FingerprintSet::kMaxOffset) return false;
      if (block_ != nullptr) {
        block_[offsets_set_ * FingerprintSet::kMetadataBytes + FingerprintSet::kOffsetAt] = static_cast<std::uint8_t>(offset);
      }
    }
    return true;
  }
  // The remainders' bits go out an aligned word at a time, in order.
  void append(std::uint64_t value, int count) {
    pending_word_ |= value << filled_;
    if (filled_ + count < 64) {
      filled_ += count;
      return;
    }
    std::memcpy(block_ + layout_.remainders_at + 8 * words_++, &pending_word_, sizeof pending_word_);
    pending_word_ = filled_ == 0 ? 0 : value >> (64 - filled_);
    filled_ = filled_ + count - 64;
  }
  void append_zeros(std::size_t count) {
    for (; count >= 64; count -= 64) append(0, 64);
    if (count != 0) append(0, static_cast<int>(count));
  }

  const Layout& layout_;
  std::uint8_t* block_;
  std::size_t next_free_ = 0;    // the slot past the last placed
  std::size_t last_slot_ = 0;
  std::size_t home_ = kNoHome;   // of the last placed
  std::size_t offsets_set_ = 0;  // the blocks before it have their offsets
  std::uint64_t pending_word_ = 0;
  int filled_ = 0;               // of pending_word_'s bits
  std::size_t words_ = 0;        // written
};

// Hands the fingerprints of `old`'s runs, read in order, to `build` in the order of their homes
// in the new layout. A run's fingerprints share their old home, so they fall in one new home
// or a few neighbouring ones (homes are in the order of the high words), sorted here keeping
// the run's order within each. With a block, a fingerprint is handed on only when what it
// writes lies below `old_remainders_at` plus the old slots read so far; the rest wait.
struct WaitingEntry {
  std::size_t home;
  Wide key;
};

bool rebuild_runs(const TableView& old, std::size_t old_remainders_at, const Layout& layout, SequentialBuild& build,
                  bool in_block, std::vector<WaitingEntry>& waiting) {
  using Entry = WaitingEntry;
  waiting.clear();              // read and not handed on, in the order they go
  std::size_t next = 0;         // the first of them not handed on
  bool fits = true;
  auto hand_on_below = [&](std::size_t limit) {
    for (; next < waiting.size() && fits; ++next) {
      if (in_block && !build.writes_below(waiting[next].home, limit)) break;
      fits = build.place(waiting[next].home, waiting[next].key);
    }
    if (next == waiting.size() || next > kWaitingReserved / 2) {
      waiting.erase(waiting.begin(), waiting.begin() + static_cast<std::ptrdiff_t>(next));
      next = 0;
    }
  };
  HomeStarts starts(old.homes);
  const bool runs_hold = visit_runs(old, [&](std::size_t h, std::size_t first, std::size_t last) {
    const std::uint64_t start = starts.start_of(h);
    const std::size_t run = waiting.size();
    for (std::size_t i = first; i <= last; ++i) {
      const Fingerprint fingerprint = old.fingerprint(start, i);
      Entry entry{layout.home(fingerprint.high), layout.key(fingerprint)};
      std::size_t at = waiting.size();
      waiting.push_back(entry);
      for (; at > run && waiting[at - 1].home > entry.home; --at) waiting[at] = waiting[at - 1];
      waiting[at] = entry;
    }
    // The old slots up to `last` are read: the bytes below the first bit of the next are free.
    hand_on_below(old_remainders_at + (last + 1) * static_cast<std::size_t>(old.width) / 8);
    return fits;
  });
  in_block = false;  // all read: nothing left to overwrite
  hand_on_below(0);
  return runs_hold && fits;
}
}  // namespace

FingerprintSet::FingerprintSet(std::size_t initial_slots) { shape(std::max(initial_slots, kMinHomes)); }

void FingerprintSet::shape(std::size_t homes) {
  size_fields(homes);
  bytes_ = TableBytes(bytes_of(homes));
  size_ = 0;
}

void FingerprintSet::size_fields(std::size_t homes) {
  homes_ = homes;
  blocks_ = blocks_for(homes);
  slots_ = blocks_ * kBlock;
  high_bits_ = high_bits_for(homes);
  width_ = width_for(homes);
  high_mask_ = ones(high_bits_);
  slot_mask_ = ones(width_);
  remainders_at_ = remainders_at_for(homes);
  limit_ = limit_for(homes);
}

FingerprintSet::Key FingerprintSet::stored_key(const Fingerprint& fingerprint) const {
  return (Wide{fingerprint.high} & high_mask_) | (Wide{fingerprint.low & 0xFFFFu} << high_bits_);
}

FingerprintSet::Key FingerprintSet::remainder(std::size_t i) const {
  const std::size_t bit = i * static_cast<std::size_t>(width_);
  Wide word;
  std::memcpy(&word, bytes_.data() + remainders_at_ + (bit >> 3), sizeof word);
  return (word >> (bit & 7)) & slot_mask_;
}

void FingerprintSet::set_remainder(std::size_t i, Key key) {
  // Word by aligned word, as shift_remainders_up writes them just before: a load that matches
  // the store before it is served from it, one that straddles two stores waits for both.
  const std::size_t bit = i * static_cast<std::size_t>(width_);
  const unsigned shift = static_cast<unsigned>(bit % 64);
  std::uint8_t* words = bytes_.data() + remainders_at_ + bit / 64 * 8;
  const auto merge = [](std::uint8_t* at, std::uint64_t value, std::uint64_t mask) {
    std::uint64_t word;
    std::memcpy(&word, at, sizeof word);
    word = (word & ~mask) | (value & mask);
    std::memcpy(at, &word, sizeof word);
  };
  merge(words, static_cast<std::uint64_t>(key << shift), static_cast<std::uint64_t>(slot_mask_ << shift));
  if (shift + static_cast<unsigned>(width_) > 64) {
    merge(words + 8, static_cast<std::uint64_t>(key >> (64 - shift)), static_cast<std::uint64_t>(slot_mask_ >> (64 - shift)));
  }
  if (shift + static_cast<unsigned>(width_) > 128) {
    merge(words + 16, static_cast<std::uint64_t>(key >> (128 - shift)), static_cast<std::uint64_t>(slot_mask_ >> (128 - shift)));
  }
}

void FingerprintSet::set_bit(int which, std::size_t i, bool value) {
  const std::size_t block = i / kBlock;
  const std::uint64_t bit = std::uint64_t{1} << (i % kBlock);
  const std::uint64_t word = metadata_word(block, which);
  set_metadata_word(block, which, value ? word | bit : word & ~bit);
}

std::size_t FingerprintSet::select_run_end(std::size_t from, unsigned d) const {
  std::size_t block = from / kBlock;
  std::uint64_t ends = run_ends(block) & ~bits_below(from % kBlock);
  for (;;) {
    const unsigned count = popcount(ends);
    if (d <= count) return block * kBlock + select_in_word(ends, d - 1);
    d -= count;
    ends = run_ends(++block);
  }
}

std::size_t FingerprintSet::occupied_between(std::size_t after, std::size_t upto) const {
  if (upto <= after) return 0;
  const std::size_t first = after + 1;
  std::size_t count = 0;
  for (std::size_t block = first / kBlock; block <= upto / kBlock && block < blocks_; ++block) {
    std::uint64_t word = occupieds(block);
    if (block == first / kBlock) word &= ~bits_below(first % kBlock);
    if (block == upto / kBlock) word &= bits_below(upto % kBlock + 1);
    count += popcount(word);
  }
  return count;
}

void FingerprintSet::shift_remainders_up(std::size_t first, std::size_t last) {
  // The bits of first .. last-1 move up by one slot's width. Each aligned 64-bit word of where
  // they go is made from the two words below it that hold its bits now, from the top down, so
  // that no word is read after it changed, and no load waits on a store that overlaps it in
  // part (what moving unaligned pieces did, a stall each).
  if (last <= first) return;
  const std::size_t width = static_cast<std::size_t>(width_);
  const std::size_t begin = (first + 1) * width, end = (last + 1) * width;  // the bits written
  const std::size_t whole = width / 64, rest = width % 64;
  std::uint8_t* words = bytes_.data() + remainders_at_;
  const auto load = [words](std::size_t j) {
    std::uint64_t word;
    std::memcpy(&word, words + 8 * j, sizeof word);
    return word;
  };
  const std::size_t first_word = begin / 64, last_word = (end - 1) / 64;
  for (std::size_t j = last_word + 1; j-- > first_word;) {
    // Bits 64j .. 64j+63 now hold what bits 64j - width .. 64j + 63 - width held.
    std::uint64_t moved = load(j - whole) << rest;
    if (rest != 0 && j > whole) moved |= load(j - whole - 1) >> (64 - rest);
    std::uint64_t mask = ~std::uint64_t{0};
    if (j == last_word) mask &= bits_below(end - 64 * j);
    if (j == first_word) mask &= ~bits_below(begin - 64 * j);
    const std::uint64_t word = (load(j) & ~mask) | (moved & mask);
    std::memcpy(words + 8 * j, &word, sizeof word);
  }
}

void FingerprintSet::shift_run_ends_up(std::size_t first, std::size_t last) {
  // The run-end bits of first .. last-1 move up by one, word by word from the top (each word
  // takes the top bit of the one below before that one changes).
  for (std::size_t block = last / kBlock + 1; block-- > first / kBlock;) {
    const std::size_t low = std::max(first + 1, block * kBlock), high = std::min(last, block * kBlock + kBlock - 1);
    if (low > high) continue;
    const std::uint64_t old = run_ends(block);
    const std::uint64_t shifted = (old << 1) | (block > 0 ? run_ends(block - 1) >> 63 : 0);
    const std::uint64_t mask = bits_below(high - block * kBlock + 1) & ~bits_below(low - block * kBlock);
    set_metadata_word(block, 1, (old & ~mask) | (shifted & mask));
  }
}

FingerprintSet::Probe FingerprintSet::probe(std::size_t h, Key key) const {
  const std::size_t block = h / kBlock;
  const std::uint64_t occupied_homes = occupieds(block);
  // The block's own runs start past those of earlier homes; the d-th run end from there is that
  // of the last occupied home before h in the block.
  const std::size_t block_runs = block * kBlock + offset(block);
  const unsigned d = popcount(occupied_homes & bits_below(h % kBlock));
  const std::size_t after_earlier_runs = d == 0 ? block_runs : select_run_end(block_runs, d) + 1;
  const std::size_t start = std::max(h, after_earlier_runs);
  Probe result;
  if (((occupied_homes >> (h % kBlock)) & 1u) == 0) {
    result.at = start;  // a new run
    return result;
  }
  result.home_has_run = true;
  for (std::size_t i = start;; ++i) {
    if (remainder(i) == key) {
      result.found = true;
      return result;
    }
    if (run_end(i)) {
      result.at = i + 1;
      return result;
    }
  }
}

bool FingerprintSet::place_at(std::size_t h, const Probe& probe, Key key) {
  const std::size_t at = probe.at;
  // The first empty slot from `at`: a slot is taken while some run of a home at or before it has
  // not ended before it. The runs of homes up to h end before `at`; those of the occupied homes
  // in (h, at] have not.
  std::size_t open_runs = occupied_between(h, at);
  std::size_t empty = at;
  while (open_runs != 0) {
    // The runs open at `empty` end at its next open_runs run ends; those of the homes passed
    // meanwhile are open past there (a jump over whole runs, rather than a step per slot).
    const std::size_t past = select_run_end(empty, static_cast<unsigned>(open_runs)) + 1;
    if (past >= slots_) return false;  // the spare slots are used up: grow
    open_runs = occupied_between(empty, past);
    empty = past;
  }
  if (empty >= slots_) return false;
  // The blocks that start in (h, empty] have one more slot of runs from before them.
  const std::size_t first_block = h / kBlock + 1;
  for (std::size_t block = first_block; block * kBlock <= empty; ++block) {
    if (offset(block) >= kMaxOffset) return false;
  }
  for (std::size_t block = first_block; block * kBlock <= empty; ++block) ++bytes_[block * kMetadataBytes + kOffsetAt];
  // Slots at .. empty-1 move up by one, with their run ends; the key goes at `at` and ends the
  // home's run, which, if it had one, ended one before.
  shift_remainders_up(at, empty);
  shift_run_ends_up(at, empty);
  set_remainder(at, key);
  set_bit(1, at, true);
  if (probe.home_has_run) {
    set_bit(1, at - 1, false);
  } else {
    set_bit(0, h, true);
  }
  return true;
}

bool FingerprintSet::insert(const Fingerprint& fingerprint) {
  const std::size_t h = home(fingerprint.high);
  const Wide key = stored_key(fingerprint);
  const Probe found = probe(h, key);
  if (found.found) return false;
  if (size_ + 1 > limit_ || !place_at(h, found, key)) {
    grow(size_ + 1);
    place(fingerprint, size_ + 1);
  }
  ++size_;
  return true;
}

void FingerprintSet::place(const Fingerprint& fingerprint, std::size_t count) {
  for (;;) {
    const std::size_t h = home(fingerprint.high);
    const Wide key = stored_key(fingerprint);
    const Probe found = probe(h, key);
    if (found.found || place_at(h, found, key)) return;
    grow(count);
  }
}

void FingerprintSet::grow(std::size_t count) {
  // Hashed fingerprints crowd no home; fingerprints that do would make the table grow without
  // end, so past this it refuses them.
  if (homes_ > 16 * count + (std::size_t{1} << 20)) {
    throw std::length_error("fingerprints crowd into too few homes of the seen-set: not a hash's");
  }
  rehash(static_cast<std::size_t>(static_cast<double>(homes_) * kGrowth), count);
}

std::vector<Fingerprint> FingerprintSet::fingerprints() const {
  std::vector<Fingerprint> all;
  all.reserve(size_);
  for_each([&](const Fingerprint& fingerprint) { all.push_back(fingerprint); });
  return all;
}

bool FingerprintSet::contains(const Fingerprint& fingerprint) const {
  return probe(home(fingerprint.high), stored_key(fingerprint)).found;
}

template <class Visit>
bool FingerprintSet::for_each_run(Visit&& visit) const {
  return visit_runs(TableView{bytes_.data(), bytes_.data() + remainders_at_, homes_, blocks_, high_bits_, width_}, visit);
}

template <class Visit>
void FingerprintSet::for_each(Visit&& visit) const {
  const TableView table{bytes_.data(), bytes_.data() + remainders_at_, homes_, blocks_, high_bits_, width_};
  HomeStarts starts(homes_);
  visit_runs(table, [&](std::size_t h, std::size_t first, std::size_t last) {
    const std::uint64_t start = starts.start_of(h);
    for (std::size_t i = first; i <= last; ++i) visit(table.fingerprint(start, i));
    return true;
  });
}

void FingerprintSet::rehash(std::size_t homes, std::size_t count) {
  ++growths_;
  if (regrow_in_place(homes)) {
    ++growths_in_place_;
    return;
  }
  FingerprintSet grown(homes);
  for_each([&](const Fingerprint& fingerprint) { grown.place(fingerprint, count); });
  const std::size_t size = size_, growths = growths_ + grown.growths_, in_place = growths_in_place_ + grown.growths_in_place_;
  *this = std::move(grown);
  size_ = size;
  growths_ = growths;
  growths_in_place_ = in_place;
}

bool FingerprintSet::regrow_in_place(std::size_t homes) {
  // The block grows to the new table's size (or stays, if that is smaller); the old remainders
  // move to its end, and the old metadata to a copy of their own. The new table is then written
  // from the front: its metadata below where the old remainders now start, its remainders slot
  // by slot, each written only once every old slot it would overwrite has been read. The new
  // slots lie about as far into the new table as the old ones into the old, which is no larger,
  // so the writing stays behind the reading but for a few runs, held in the meantime.
  const std::size_t old_bytes = bytes_.size();
  const std::size_t new_bytes = bytes_of(homes);
  const std::size_t block_bytes = std::max(old_bytes, new_bytes);
  const std::size_t old_remainder_bytes = old_bytes - remainders_at_;
  const std::size_t old_remainders_moved_to = block_bytes - old_remainder_bytes;
  if (homes <= homes_ || remainders_at_for(homes) > old_remainders_moved_to) return false;
  TableView old{bytes_.data(), bytes_.data() + remainders_at_, homes_, blocks_, high_bits_, width_};
  const Layout layout(homes);
  // Whether the fingerprints fit the new table as they are (every run before the spare slots'
  // end, every block's offset within its byte): surely, when no fingerprint lies far from its
  // home (longest_displacement); otherwise a dry run places them all without writing.
  std::vector<WaitingEntry> waiting;
  if (longest_displacement(old) >= kSpareSlots) {
    SequentialBuild dry_run(layout, nullptr);
    if (!rebuild_runs(old, 0, layout, dry_run, false, waiting) || !dry_run.finish()) return false;
  }
  // Allocated before the old table is taken apart: past here only `waiting` may allocate, and
  // only when more than this many fingerprints wait at once (runs far longer than a hash makes).
  waiting.reserve(std::min(size_, kWaitingReserved));
  const std::vector<std::uint8_t> old_metadata(bytes_.data(), bytes_.data() + remainders_at_);
  bytes_.resize_keeping(block_bytes);
  std::uint8_t* const block = bytes_.data();
  std::memmove(block + old_remainders_moved_to, block + remainders_at_, old_remainder_bytes);
  old.metadata = old_metadata.data();
  old.remainders = block + old_remainders_moved_to;
  size_fields(homes);
  std::memset(block, 0, remainders_at_);
  SequentialBuild build(layout, block);
  bool built = false;
  try {
    // The dry run placed the same fingerprints in the same order, so this cannot fail.
    built = rebuild_runs(old, old_remainders_moved_to, layout, build, true, waiting) && build.finish();
  } catch (...) {
    // Out of memory with the old table taken apart: the table is lost, so it is left empty
    // (and the search, which cannot go on, fails with the error).
    const std::size_t growths = growths_, in_place = growths_in_place_;
    *this = FingerprintSet(kMinHomes);
    growths_ = growths;
    growths_in_place_ = in_place;
    throw;
  }
  if (!built) throw std::logic_error("the seen-set's growth in place went wrong after its dry run succeeded");
  bytes_.resize_keeping(new_bytes);
  return true;
}

std::size_t FingerprintSet::bytes_after_growth() const {
  return bytes_of(static_cast<std::size_t>(static_cast<double>(homes_) * kGrowth));
}

std::size_t FingerprintSet::bytes_while_growing() const {
  return std::max(bytes_after_growth() + remainders_at_, bytes_.size());
}

std::size_t FingerprintSet::bytes_for(std::size_t n) const { return std::max(bytes_of(homes_for(n)), bytes_.size()); }

void FingerprintSet::reserve(std::size_t n) {
  const std::size_t homes = homes_for(n);
  if (homes > homes_) rehash(homes, std::max(n, size_));
}

void FingerprintSet::assign(std::size_t home_slots, TableBytes bytes) {
  auto refuse = [] { throw std::invalid_argument("these are not the slots of a fingerprint set"); };
  if (home_slots < kMinHomes || home_slots > (std::size_t{1} << 40) || bytes.size() != bytes_of(home_slots)) refuse();
  FingerprintSet table(kMinHomes);
  table.size_fields(home_slots);  // the bytes are the snapshot's: no table of that size allocated first
  table.bytes_ = std::move(bytes);
  // Runs that hold together (each run end closes an occupied home's run, no home past the
  // last), each block's offset what its runs make it, and no more than the table may hold.
  std::size_t size = 0;
  std::size_t block = 0;          // the next block whose offset is checked
  std::size_t last_run_end = 0;   // of the runs so far
  bool offsets_hold = true;
  auto check_offsets_upto = [&](std::size_t h) {  // the blocks that start at or before home h
    for (; block < table.blocks_ && block * kBlock <= h; ++block) {
      const std::size_t expected = size == 0 || last_run_end < block * kBlock ? 0 : last_run_end - block * kBlock + 1;
      if (table.offset(block) != expected) offsets_hold = false;
    }
  };
  const bool runs_hold = table.for_each_run([&](std::size_t h, std::size_t first, std::size_t last) {
    check_offsets_upto(h);
    size += last - first + 1;
    last_run_end = last;
    return offsets_hold;
  });
  check_offsets_upto(table.slots_);
  if (!runs_hold || !offsets_hold || size > table.limit_) refuse();
  table.size_ = size;
  *this = std::move(table);
}

}  // namespace fp8sm::explorer
