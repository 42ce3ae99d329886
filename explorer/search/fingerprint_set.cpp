#include "explorer/search/fingerprint_set.hpp"

#include <algorithm>
#include <stdexcept>

namespace fp8sm::explorer {

namespace {
__extension__ typedef unsigned __int128 Wide;  // g++ and clang; the product of two 64-bit words

constexpr double kMaxLoad = 0.9;
constexpr double kGrowth = 1.2;

std::size_t limit_for(std::size_t slots) { return static_cast<std::size_t>(static_cast<double>(slots) * kMaxLoad); }
}  // namespace

FingerprintSet::FingerprintSet(std::size_t initial_slots)
    : slots_(std::max<std::size_t>(initial_slots, 16), 0), limit_(limit_for(slots_.size())) {}

// Multiply-shift: the high bits of fingerprint × size, uniform over [0, size) for a uniform
// fingerprint, whatever the size.
std::size_t FingerprintSet::home(std::uint64_t fingerprint) const {
  return static_cast<std::size_t>((static_cast<Wide>(fingerprint) * slots_.size()) >> 64);
}

void FingerprintSet::place(std::uint64_t value) {
  std::size_t i = home(value);
  while (slots_[i] != 0) i = i + 1 == slots_.size() ? 0 : i + 1;
  slots_[i] = value;
}

bool FingerprintSet::insert(std::uint64_t fingerprint) {
  const std::uint64_t value = stored(fingerprint);
  std::size_t i = home(value);
  for (;; i = i + 1 == slots_.size() ? 0 : i + 1) {
    if (slots_[i] == value) return false;
    if (slots_[i] == 0) break;
  }
  if (size_ + 1 > limit_) {
    grow();
    place(value);
  } else {
    slots_[i] = value;
  }
  ++size_;
  return true;
}

bool FingerprintSet::contains(std::uint64_t fingerprint) const {
  const std::uint64_t value = stored(fingerprint);
  for (std::size_t i = home(value);; i = i + 1 == slots_.size() ? 0 : i + 1) {
    if (slots_[i] == value) return true;
    if (slots_[i] == 0) return false;
  }
}

std::size_t FingerprintSet::bytes_after_growth() const {
  return static_cast<std::size_t>(static_cast<double>(slots_.size()) * kGrowth) * sizeof(std::uint64_t);
}

void FingerprintSet::grow() { rehash(static_cast<std::size_t>(static_cast<double>(slots_.size()) * kGrowth)); }

std::size_t FingerprintSet::bytes_for(std::size_t n) const {
  const auto slots = static_cast<std::size_t>(static_cast<double>(n) / kMaxLoad) + 1;
  return std::max(slots, slots_.size()) * sizeof(std::uint64_t);
}

void FingerprintSet::reserve(std::size_t n) {
  const auto slots = static_cast<std::size_t>(static_cast<double>(n) / kMaxLoad) + 1;
  if (slots > slots_.size()) rehash(slots);
}

void FingerprintSet::assign_slots(std::vector<std::uint64_t> slots) {
  const auto size = static_cast<std::size_t>(std::count_if(slots.begin(), slots.end(), [](std::uint64_t v) { return v != 0; }));
  if (slots.size() < 16 || size > limit_for(slots.size())) {
    throw std::invalid_argument("these are not the slots of a fingerprint set");
  }
  slots_ = std::move(slots);
  size_ = size;
  limit_ = limit_for(slots_.size());
}

void FingerprintSet::rehash(std::size_t slots) {
  std::vector<std::uint64_t> old;
  old.swap(slots_);
  slots_.assign(slots, 0);
  limit_ = limit_for(slots_.size());
  for (std::uint64_t value : old) {
    if (value != 0) place(value);
  }
}

}  // namespace fp8sm::explorer
