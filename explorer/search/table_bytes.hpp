// The bytes of the seen-set's table, in a block that can grow where it lies. A large block comes
// from the C allocator's own mapping, and realloc grows it by remapping its pages, not by
// copying them into a second block (glibc: any block past its mmap threshold, at most 32 MiB).
// So a table that grows holds its new size, not its old size and its new size together; what
// moves its contents into the new layout is the table's (FingerprintSet::regrow_in_place).
// std::vector cannot do this: it always allocates the new block before freeing the old.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>
#include <vector>

namespace fp8sm::explorer {

class TableBytes {
 public:
  TableBytes() = default;
  // `size` zero bytes.
  explicit TableBytes(std::size_t size) : data_(allocate(size, true)), size_(size) {}
  explicit TableBytes(const std::vector<std::uint8_t>& bytes) : TableBytes(bytes.size()) {
    if (!bytes.empty()) std::memcpy(data_, bytes.data(), bytes.size());
  }
  TableBytes(const TableBytes& other) : data_(allocate(other.size_, false)), size_(other.size_) {
    if (size_ != 0) std::memcpy(data_, other.data_, size_);
  }
  TableBytes(TableBytes&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  TableBytes& operator=(TableBytes other) noexcept {
    std::swap(data_, other.data_);
    std::swap(size_, other.size_);
    return *this;
  }
  ~TableBytes() { std::free(data_); }

  std::uint8_t* data() { return data_; }
  const std::uint8_t* data() const { return data_; }
  std::size_t size() const { return size_; }
  std::uint8_t& operator[](std::size_t i) { return data_[i]; }
  std::uint8_t operator[](std::size_t i) const { return data_[i]; }

  // The first min(size, size()) bytes are kept, the rest are not set.
  void resize_keeping(std::size_t size) {
    if (size == 0) {
      *this = TableBytes();
      return;
    }
    void* grown = std::realloc(data_, size);
    if (grown == nullptr) throw std::bad_alloc();
    data_ = static_cast<std::uint8_t*>(grown);
    size_ = size;
  }

  std::vector<std::uint8_t> to_vector() const { return std::vector<std::uint8_t>(data_, data_ + size_); }

  friend bool operator==(const TableBytes& a, const TableBytes& b) {
    return a.size_ == b.size_ && (a.size_ == 0 || std::memcmp(a.data_, b.data_, a.size_) == 0);
  }
  friend bool operator!=(const TableBytes& a, const TableBytes& b) { return !(a == b); }

 private:
  static std::uint8_t* allocate(std::size_t size, bool zero) {
    if (size == 0) return nullptr;
    void* block = zero ? std::calloc(size, 1) : std::malloc(size);
    if (block == nullptr) throw std::bad_alloc();
    return static_cast<std::uint8_t*>(block);
  }

  std::uint8_t* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace fp8sm::explorer
