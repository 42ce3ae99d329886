// Byte packing for snapshots of a machine (Machine::snapshot, which the runtime's tests compare
// with the model's): equal encodings mean equal futures. The exhaustive search has its own,
// flat canonical form (explorer/model/canonical_state.hpp).
//
// Values are appended little-endian. Identifiers that the model invents as it runs (checkpoint
// captures, autograd nodes, graph generations) are written with put_id: with canonical ids
// on, finish() renames each kind to its rank among the ids the encoding mentions, so two
// states that differ only in how many ids were handed out before (a checkpoint created and
// released, a node recorded and freed) encode alike. Ranks keep order and equality, which is
// all the model ever asks of an id (fresh ids are larger than every id in use, and
// next-id counters are encoded as ids too, so they stay the largest).
//
// Tables indexed by an id (per-capture records, released flags, the interpreter's checkpoint
// frames and records, which nodes name by position) are written as keyed entries: with
// canonical ids on, an entry is kept only if its id is mentioned by the rest of the encoding
// or by another kept entry (a frame names its parent), since nothing can ever read an entry
// of an id nothing refers to. Kept entries follow the rest, in id order.
#pragma once

#include <cstdint>
#include <algorithm>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace fp8sm::statemachine {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "snapshots copy little-endian bytes as they are");

enum class IdKind : std::uint8_t {
  Capture,     // a checkpoint instance
  Node,        // an autograd node
  Generation,  // a graph
  Frame,       // the interpreter's non-reentrant checkpoint frame (its position)
  Record,      // the interpreter's reentrant checkpoint record (its position)
};
inline constexpr int kIdKinds = 5;

class Encoder {
 public:
  explicit Encoder(bool canonical_ids = false) : canonical_(canonical_ids) {}

  // Appends the low `bytes` bytes (at most 8) of `value` (to the open keyed entry, if any).
  void put(std::uint64_t value, int bytes) { target().put(value, bytes); }
  void append(std::string_view text) { target().append(text.data(), text.size()); }
  // An id of `kind` (4 bytes). Inside a keyed entry, the mention counts only if the entry is kept.
  void put_id(IdKind kind, std::uint32_t id);
  // The place of an id when there is none (4 bytes, never renamed).
  void put_no_id() { put(0xFFFFFFFFu, 4); }

  // Everything put between these two belongs to the entry of `id` in a table indexed by ids.
  void begin_keyed(IdKind kind, std::uint32_t id);
  void end_keyed();

  // Appends the encoding to `out` (ids renamed and dead entries dropped if canonical) and
  // empties the encoder for reuse.
  void finish(std::string& out);

 private:
  // A byte buffer that appends small values with one unaligned store: encoding is on the
  // search's hot path, and std::string::append of 1-4 bytes was a tenth of its time.
  class Bytes {
   public:
    void put(std::uint64_t value, int bytes) {
      reserve(size_ + sizeof value);
      std::memcpy(data_.data() + size_, &value, sizeof value);
      size_ += static_cast<std::size_t>(bytes);
    }
    void append(const char* text, std::size_t n) {
      reserve(size_ + n);
      std::memcpy(data_.data() + size_, text, n);
      size_ += n;
    }
    char* at(std::size_t offset) { return data_.data() + offset; }
    const char* data() const { return data_.data(); }
    std::size_t size() const { return size_; }
    void clear() { size_ = 0; }

   private:
    void reserve(std::size_t n) {
      if (n > data_.size()) data_.resize(std::max(n, 2 * data_.size()));
    }
    std::vector<char> data_;
    std::size_t size_ = 0;
  };
  static constexpr std::size_t kNoEntry = ~std::size_t{0};
  struct IdSlot {
    std::size_t entry;   // keyed entry it was written in, or kNoEntry
    std::size_t offset;  // in bytes_, or in keyed_bytes_
    IdKind kind;
    std::uint32_t id;
  };
  struct KeyedEntry {
    IdKind kind;
    std::uint32_t id;
    std::size_t begin, end;            // its bytes in keyed_bytes_
    std::size_t first_slot, end_slot;  // its ids in ids_
    bool kept;
  };
  Bytes& target() { return in_keyed_ ? keyed_bytes_ : bytes_; }
  bool mentioned(IdKind kind, std::uint32_t id) const;

  bool canonical_;
  bool in_keyed_ = false;
  Bytes bytes_;
  Bytes keyed_bytes_;
  std::vector<IdSlot> ids_;
  std::vector<KeyedEntry> keyed_;
  std::vector<std::uint32_t> mentioned_[kIdKinds];  // finish()'s working sets, kept for their capacity
  std::vector<std::size_t> order_;
};

// Appends the low `bytes` bytes of `value`.
inline void put(Encoder& out, std::uint64_t value, int bytes) { out.put(value, bytes); }

}  // namespace fp8sm::statemachine
