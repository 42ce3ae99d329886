#include "explorer/search/frontier.hpp"

namespace fp8sm::explorer {

void Frontier::truncate(std::size_t n) {
  if (n >= size_) return;
  size_ = n;
  chunks_.resize((n + kChunk - 1) / kChunk);
}

std::size_t Frontier::lower_bound(std::uint64_t key) const {
  std::size_t low = 0;
  std::size_t high = size_;
  while (low < high) {
    const std::size_t mid = low + (high - low) / 2;
    if ((*this)[mid].key < key) {
      low = mid + 1;
    } else {
      high = mid;
    }
  }
  return low;
}

}  // namespace fp8sm::explorer
