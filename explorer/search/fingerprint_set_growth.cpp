// The seen-set's growth where it lies (FingerprintSet::regrow_in_place, fingerprint_set.hpp;
// docs/explorer.md, "Fingerprints"): the table's block is enlarged, the old remainders moved to
// its end, and the new table written from the front, behind where the old one is read.
#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "explorer/search/fingerprint_layout.hpp"
#include "explorer/search/fingerprint_set.hpp"

namespace fp8sm::explorer {

using namespace fingerprint_layout;

namespace {

// Fingerprints that may wait to be written while a table grows where it lies, without allocating.
constexpr std::size_t kWaitingReserved = 4096;

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
  TableView old = table_view();
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
    // The displacement bound, or else the dry run over the same fingerprints in the same order,
    // said that they fit: this cannot fail.
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
  if (!built) throw std::logic_error("the seen-set's growth in place found a fingerprint that did not fit");
  bytes_.resize_keeping(new_bytes);
  return true;
}

}  // namespace fp8sm::explorer
