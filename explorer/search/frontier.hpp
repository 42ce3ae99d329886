// The states of one layer that a rank owns, as the search keeps them between layers: each its
// discovery key and its path (search_path.hpp), in key order (the order in which the rank
// stored them). The states themselves are rebuilt from their paths when expanded.
//
// A slot is 24 bytes: the key and a path of up to 16 codes, which is every path of a
// depth-bounded search. A longer one (a search to the fixpoint) has its codes, and no padding,
// in a second store, one after the other, and its slot names where they lie and how many they
// are: a long path costs its own length (17 to 96 bytes), only where it occurs.
//
// Slots and long paths live in fixed-size chunks: growing never copies the layer nor holds
// twice its size, as a doubling vector would (the next layer is built while the search is
// closest to its memory budget).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "explorer/search/search_path.hpp"

namespace fp8sm::explorer {

struct FrontierEntry {
  std::uint64_t key = 0;
  SearchPath path;
};

class Frontier {
 public:
  static constexpr std::size_t kChunk = std::size_t{1} << 12;  // slots a chunk: 96 KiB
  static constexpr int kInlineCodes = 16;
  static constexpr std::size_t kSlotChunkBytes = kChunk * 24;                    // a chunk of slots
  static constexpr std::size_t kLongPathChunkBytes = std::size_t{1} << 16;       // a chunk of long paths' codes

  void push_back(const FrontierEntry& entry);
  FrontierEntry operator[](std::size_t i) const;
  std::uint64_t key(std::size_t i) const { return slot(i).key; }
  void set_key(std::size_t i, std::uint64_t key) { chunks_[i / kChunk][i % kChunk].key = key; }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  // Keeps the first `n` entries.
  void truncate(std::size_t n);
  void clear() {
    chunks_.clear();
    long_paths_.clear();
    size_ = 0;
    long_bytes_ = 0;
    released_ = 0;
    long_released_ = 0;
  }
  // Gives back the chunks that hold only entries before `i`: a layer's expansion reads its
  // parents once, in index order, and a search to the fixpoint builds the next layer as it
  // reads them, so it held both layers' paths at each layer's end. The entries before `i` may
  // no longer be read, nor the frontier truncated; it can still be cleared.
  void release_before(std::size_t i);
  std::size_t bytes() const {
    return (chunks_.size() - released_) * kSlotChunkBytes + (long_paths_.size() - long_released_) * kLongPathChunkBytes;
  }
  // The bytes storing one more entry with `path` adds: none, or a new chunk of slots, and of
  // long paths for a path past kInlineCodes.
  std::size_t growth_for(const SearchPath& path) const {
    std::size_t bytes = size_ == chunks_.size() * kChunk ? kSlotChunkBytes : 0;
    const int codes = path.size();
    if (codes > kInlineCodes && long_path_start(codes) + static_cast<std::size_t>(codes) > long_paths_.size() * kLongPathChunkBytes)
      bytes += kLongPathChunkBytes;
    return bytes;
  }
  // The index of the first entry whose key is not less than `key` (entries are in key order).
  std::size_t lower_bound(std::uint64_t key) const;

 private:
  // The key and the path's codes, padded with kNoStatementCode; or, for a longer path,
  // kLongPath, its length (codes[1]) and where its codes start among long_paths_ (codes[8..15]).
  struct Slot {
    std::uint64_t key;
    std::uint8_t codes[kInlineCodes];
  };
  static_assert(sizeof(Slot) * kChunk == kSlotChunkBytes);
  static constexpr std::uint8_t kLongPath = 0x3E;  // no statement, and not kNoStatementCode

  const Slot& slot(std::size_t i) const { return chunks_[i / kChunk][i % kChunk]; }
  // Where the next long path of `codes` codes starts: at the end of the last, or at the next
  // chunk's start if it would cross into it (a path is read from one chunk).
  std::size_t long_path_start(int codes) const {
    const std::size_t room = kLongPathChunkBytes - long_bytes_ % kLongPathChunkBytes;
    return room < static_cast<std::size_t>(codes) ? long_bytes_ + room : long_bytes_;
  }

  // Where the long path of the last entry in [begin, end) that has one ends; 0 if none has.
  std::size_t long_paths_end(std::size_t begin, std::size_t end) const;

  std::vector<std::unique_ptr<Slot[]>> chunks_;
  std::vector<std::unique_ptr<std::uint8_t[]>> long_paths_;
  std::size_t size_ = 0;
  std::size_t long_bytes_ = 0;      // the end of the last long path's codes
  std::size_t released_ = 0;        // the first chunks of slots, given back (release_before)
  std::size_t long_released_ = 0;   // the first chunks of long paths, given back
  std::size_t unreturned_ = 0;      // bytes given back since the allocator last returned them to the system
};

}  // namespace fp8sm::explorer
