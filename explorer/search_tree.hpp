// How every stored state was first reached: its parent's index and the statement taken, five
// bytes a state. A state is rebuilt, and a counterexample printed, by walking this tree to
// the root. Entries live in fixed-size chunks, so growing never copies the tree nor holds
// twice its size, as a doubling vector would.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "spec/scenario.hpp"

namespace fp8sm::explorer {

// A statement of the search's alphabet in one byte: 0..15 the op of a statement without a
// name, 64..127 `linear` of module 0..63, 128..159 `save` of tape 0..31, 160..255 `backward`
// ((tape + 1) * 2 + retain, tape -1 being the current graph). Throws std::invalid_argument
// for a statement outside that range.
std::uint8_t pack_statement(const spec::Statement& s);
spec::Statement unpack_statement(std::uint8_t packed);
inline constexpr int kMaxPackedModules = 64;
inline constexpr int kMaxPackedTapes = 32;

class SearchTree {
 public:
  static constexpr std::uint32_t kNoParent = 0xFFFFFFFFu;
  static constexpr std::size_t kBytesPerState = sizeof(std::uint32_t) + sizeof(std::uint8_t);

  // The root (index 0) is the empty program.
  SearchTree();

  std::uint32_t add(std::uint32_t parent, const spec::Statement& via);
  std::uint32_t add_packed(std::uint32_t parent, std::uint8_t via);  // via: pack_statement's
  std::size_t size() const { return size_; }
  std::uint32_t parent(std::uint32_t index) const { return chunk(index).parents[index % kChunk]; }
  spec::Statement via(std::uint32_t index) const { return unpack_statement(chunk(index).vias[index % kChunk]); }
  // The statements from the root to `index`, in program order.
  std::vector<spec::Statement> path(std::uint32_t index) const;
  std::size_t bytes() const { return chunks_.size() * kChunk * kBytesPerState; }
  // Whether one more state needs a new chunk, and what that chunk costs.
  bool full() const { return size_ == chunks_.size() * kChunk; }
  static constexpr std::size_t chunk_bytes() { return kChunk * kBytesPerState; }

  // The tree as it is now, for threads that rebuild states while another adds to the tree:
  // adding may move the chunk list (not the chunks), so readers hold their own list of the
  // chunks. Entries present when the view was taken never change.
  class View {
   public:
    std::vector<spec::Statement> path(std::uint32_t index) const;
    void path(std::uint32_t index, std::vector<spec::Statement>& statements) const;  // into `statements`
    std::uint32_t parent(std::uint32_t index) const { return parents_[index / kChunk][index % kChunk]; }
    spec::Statement via(std::uint32_t index) const { return unpack_statement(vias_[index / kChunk][index % kChunk]); }

   private:
    friend class SearchTree;
    std::vector<const std::uint32_t*> parents_;
    std::vector<const std::uint8_t*> vias_;
  };
  View view() const;

 private:
  static constexpr std::size_t kChunk = std::size_t{1} << 12;  // 20 KiB: small against any search worth storing
  struct Chunk {
    std::unique_ptr<std::uint32_t[]> parents{new std::uint32_t[kChunk]};
    std::unique_ptr<std::uint8_t[]> vias{new std::uint8_t[kChunk]};
  };
  const Chunk& chunk(std::uint32_t index) const { return chunks_[index / kChunk]; }

  std::vector<Chunk> chunks_;
  std::size_t size_ = 0;
};

}  // namespace fp8sm::explorer
