#include "explorer/search/fingerprint_set.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <stdexcept>

#include "explorer/search/fingerprint_layout.hpp"

namespace fp8sm::explorer {

using namespace fingerprint_layout;

namespace {

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

TableView FingerprintSet::table_view() const {
  return TableView{bytes_.data(), bytes_.data() + remainders_at_, homes_, blocks_, high_bits_, width_};
}

template <class Visit>
bool FingerprintSet::for_each_run(Visit&& visit) const {
  return visit_runs(table_view(), visit);
}

template <class Visit>
void FingerprintSet::for_each(Visit&& visit) const {
  const TableView table = table_view();
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

std::size_t FingerprintSet::bytes_while_growing_to(std::size_t homes) const {
  return homes > homes_ ? std::max(bytes_of(homes) + remainders_at_, bytes_.size()) : bytes_.size();
}

std::size_t FingerprintSet::bytes_while_growing() const {
  return bytes_while_growing_to(static_cast<std::size_t>(static_cast<double>(homes_) * kGrowth));
}

std::size_t FingerprintSet::bytes_for(std::size_t n, double load) const {
  return std::max(bytes_of(homes_for(n, load)), bytes_.size());
}

std::size_t FingerprintSet::bytes_while_reserving(std::size_t n, double load) const {
  return bytes_while_growing_to(homes_for(n, load));
}

std::size_t FingerprintSet::most_within(std::size_t bytes, double load) const {
  // bytes_while_reserving grows with n, and a state takes more than a byte: a bisection below
  // `bytes` states.
  std::size_t fits = size_, beyond = std::max(bytes, size_) + 1;
  while (beyond - fits > 1) {
    const std::size_t n = fits + (beyond - fits) / 2;
    (bytes_while_reserving(n, load) <= bytes ? fits : beyond) = n;
  }
  return fits;
}

void FingerprintSet::reserve(std::size_t n, double load) {
  if (!(load > 0.0 && load <= kFullestLoad)) throw std::invalid_argument("a seen-set's load is in (0, 0.95]");
  const std::size_t homes = homes_for(n, load);
  if (homes > homes_) rehash(homes, std::max(n, size_));
  limit_ = std::max(limit_, n);  // past 90 % full where `load` says so
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
  if (!runs_hold || !offsets_hold || static_cast<double>(size) > static_cast<double>(home_slots) * kFullestLoad) refuse();
  table.size_ = size;
  table.limit_ = std::max(table.limit_, size);  // a table reserved past 90 % full holds as many
  *this = std::move(table);
}

}  // namespace fp8sm::explorer
