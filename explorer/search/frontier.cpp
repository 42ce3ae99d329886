#include "explorer/search/frontier.hpp"

#include <algorithm>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace fp8sm::explorer {

static_assert(Frontier::kInlineCodes <= kMaxPathCodes);
static_assert(kMaxPathCodes < 256 && kMaxPathCodes <= static_cast<int>(Frontier::kLongPathChunkBytes));

void Frontier::push_back(const FrontierEntry& entry) {
  if (size_ == chunks_.size() * kChunk) chunks_.emplace_back(new Slot[kChunk]);
  Slot& slot = chunks_[size_ / kChunk][size_ % kChunk];
  slot.key = entry.key;
  if (entry.path.size() <= kInlineCodes) {
    std::memcpy(slot.codes, entry.path.codes(), kInlineCodes);
  } else {
    const int codes = entry.path.size();
    const std::uint64_t at = long_path_start(codes);
    while (at + static_cast<std::size_t>(codes) > long_paths_.size() * kLongPathChunkBytes)
      long_paths_.emplace_back(new std::uint8_t[kLongPathChunkBytes]);
    std::memcpy(&long_paths_[at / kLongPathChunkBytes][at % kLongPathChunkBytes], entry.path.codes(),
                static_cast<std::size_t>(codes));
    long_bytes_ = at + static_cast<std::size_t>(codes);
    slot.codes[0] = kLongPath;
    slot.codes[1] = static_cast<std::uint8_t>(codes);
    std::memcpy(slot.codes + 8, &at, sizeof at);
  }
  ++size_;
}

FrontierEntry Frontier::operator[](std::size_t i) const {
  const Slot& s = slot(i);
  FrontierEntry entry;
  entry.key = s.key;
  if (s.codes[0] != kLongPath) {
    entry.path = SearchPath::from_codes(s.codes, kInlineCodes);
  } else {
    std::uint64_t at;
    std::memcpy(&at, s.codes + 8, sizeof at);
    entry.path = SearchPath::from_codes(&long_paths_[at / kLongPathChunkBytes][at % kLongPathChunkBytes], s.codes[1]);
  }
  return entry;
}

void Frontier::truncate(std::size_t n) {
  if (n >= size_) return;
  // The long paths of the entries kept come first (they were stored in entry order): they end
  // where the last kept entry's long path ends.
  const std::size_t long_kept = long_paths_end(0, n);
  size_ = n;
  long_bytes_ = long_kept;
  chunks_.resize((n + kChunk - 1) / kChunk);
  long_paths_.resize((long_kept + kLongPathChunkBytes - 1) / kLongPathChunkBytes);
}

std::size_t Frontier::long_paths_end(std::size_t begin, std::size_t end) const {
  for (std::size_t i = end; i-- > begin;) {
    const Slot& s = slot(i);
    if (s.codes[0] != kLongPath) continue;
    std::uint64_t at;
    std::memcpy(&at, s.codes + 8, sizeof at);
    return at + s.codes[1];
  }
  return 0;
}

void Frontier::release_before(std::size_t i) {
  const std::size_t chunks = std::min(i / kChunk, chunks_.size());
  if (chunks <= released_) return;
  // Long paths are stored in entry order: the last one among the entries given back ends where
  // the later entries' begin, and the chunks wholly before that end hold no later entry's path.
  const std::size_t long_chunks = long_paths_end(released_ * kChunk, chunks * kChunk) / kLongPathChunkBytes;
  for (; long_released_ < long_chunks; ++long_released_) {
    long_paths_[long_released_].reset();
    unreturned_ += kLongPathChunkBytes;
  }
  for (; released_ < chunks; ++released_) {
    chunks_[released_].reset();
    unreturned_ += kSlotChunkBytes;
  }
  // The chunks are small enough to come from the heap, where a free block amid others stays
  // the process's (glibc gives back only the heap's top by itself): returned explicitly, every
  // few MiB, or the layer's end would still hold them.
#if defined(__GLIBC__)
  constexpr std::size_t kReturnEvery = std::size_t{16} << 20;
  if (unreturned_ >= kReturnEvery) {
    malloc_trim(0);
    unreturned_ = 0;
  }
#endif
}

std::size_t Frontier::lower_bound(std::uint64_t key) const {
  std::size_t low = 0;
  std::size_t high = size_;
  while (low < high) {
    const std::size_t mid = low + (high - low) / 2;
    if (slot(mid).key < key) {
      low = mid + 1;
    } else {
      high = mid;
    }
  }
  return low;
}

}  // namespace fp8sm::explorer
