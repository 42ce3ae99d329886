#include "explorer/search/frontier.hpp"

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
  std::size_t long_kept = 0;
  for (std::size_t i = n; i-- > 0;) {
    const Slot& s = slot(i);
    if (s.codes[0] != kLongPath) continue;
    std::uint64_t at;
    std::memcpy(&at, s.codes + 8, sizeof at);
    long_kept = at + s.codes[1];
    break;
  }
  size_ = n;
  long_bytes_ = long_kept;
  chunks_.resize((n + kChunk - 1) / kChunk);
  long_paths_.resize((long_kept + kLongPathChunkBytes - 1) / kLongPathChunkBytes);
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
