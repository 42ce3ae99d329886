#include "explorer/search/frontier.hpp"

namespace fp8sm::explorer {

static_assert(Frontier::kInlineCodes <= kMaxPathCodes);

void Frontier::push_back(const FrontierEntry& entry) {
  if (size_ == chunks_.size() * kChunk) chunks_.emplace_back(new Slot[kChunk]);
  Slot& slot = chunks_[size_ / kChunk][size_ % kChunk];
  slot.key = entry.key;
  if (entry.path.size() <= kInlineCodes) {
    std::memcpy(slot.codes, entry.path.codes(), kInlineCodes);
  } else {
    if (long_size_ == long_paths_.size() * kChunk) long_paths_.emplace_back(new SearchPath[kChunk]);
    long_paths_[long_size_ / kChunk][long_size_ % kChunk] = entry.path;
    slot.codes[0] = kLongPath;
    const std::uint64_t at = long_size_++;
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
    entry.path = long_paths_[at / kChunk][at % kChunk];
  }
  return entry;
}

void Frontier::truncate(std::size_t n) {
  if (n >= size_) return;
  // The long paths of the entries kept come first (they were stored in entry order).
  std::size_t long_kept = 0;
  for (std::size_t i = 0; i < n; ++i) long_kept += slot(i).codes[0] == kLongPath ? 1 : 0;
  size_ = n;
  long_size_ = long_kept;
  chunks_.resize((n + kChunk - 1) / kChunk);
  long_paths_.resize((long_kept + kChunk - 1) / kChunk);
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
