// The states of one layer that a rank owns, as the search keeps them between layers: each its
// discovery key and its path (search_path.hpp), 24 bytes, in key order (the order in which the
// rank stored them). The states themselves are rebuilt from their paths when expanded.
//
// Entries live in fixed-size chunks: growing never copies the layer nor holds twice its size,
// as a doubling vector would (the next layer is built while the search is closest to its
// memory budget).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "explorer/search/search_path.hpp"

namespace fp8sm::explorer {

struct FrontierEntry {
  std::uint64_t key = 0;
  SearchPath path;
};
static_assert(sizeof(FrontierEntry) == 24);

class Frontier {
 public:
  static constexpr std::size_t kChunk = std::size_t{1} << 12;  // 96 KiB a chunk

  void push_back(const FrontierEntry& entry) {
    if (size_ == chunks_.size() * kChunk) chunks_.emplace_back(new FrontierEntry[kChunk]);
    chunks_[size_ / kChunk][size_ % kChunk] = entry;
    ++size_;
  }
  const FrontierEntry& operator[](std::size_t i) const { return chunks_[i / kChunk][i % kChunk]; }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  // Keeps the first `n` entries.
  void truncate(std::size_t n);
  void clear() {
    chunks_.clear();
    size_ = 0;
  }
  std::size_t bytes() const { return chunks_.size() * chunk_bytes(); }
  // Whether one more entry needs a new chunk, and what a chunk costs.
  bool full() const { return size_ == chunks_.size() * kChunk; }
  static constexpr std::size_t chunk_bytes() { return kChunk * sizeof(FrontierEntry); }
  // The index of the first entry whose key is not less than `key` (entries are in key order).
  std::size_t lower_bound(std::uint64_t key) const;

 private:
  std::vector<std::unique_ptr<FrontierEntry[]>> chunks_;
  std::size_t size_ = 0;
};

}  // namespace fp8sm::explorer
