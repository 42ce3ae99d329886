#include "explorer/search/fingerprint_set.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace fp8sm::explorer {

namespace {
__extension__ typedef unsigned __int128 Wide;  // g++ and clang

constexpr double kMaxLoad = 0.9;
constexpr double kGrowth = 1.2;
constexpr std::size_t kMinHomes = 16;
constexpr std::size_t kPadding = sizeof(Wide);  // a slot is read as the 16 bytes from its first

std::size_t limit_for(std::size_t homes) { return static_cast<std::size_t>(static_cast<double>(homes) * kMaxLoad); }
std::size_t homes_for(std::size_t n) { return std::max(kMinHomes, static_cast<std::size_t>(static_cast<double>(n) / kMaxLoad) + 1); }

// L: the bits of the high word a slot keeps, enough to tell apart the high words of one home
// (2^L ≥ ceil(2^64 / homes)).
int high_bits_for(std::size_t homes) {
  const Wide width = ((Wide{1} << 64) + homes - 1) / homes;
  int bits = 0;
  while ((Wide{1} << bits) < width) ++bits;
  return bits;
}

int width_for(std::size_t homes) {
  return high_bits_for(homes) + FingerprintSet::kLowBits + FingerprintSet::kDistanceBits;
}

std::size_t bytes_of(std::size_t homes) {
  const std::size_t slots = homes + FingerprintSet::kMaxDistance + 1;  // the last one stays empty: probes stop there
  return (slots * static_cast<std::size_t>(width_for(homes)) + 7) / 8 + kPadding;
}

Wide ones(int bits) { return bits >= 128 ? ~Wide{0} : (Wide{1} << bits) - 1; }

// The first high word of each home, ceil(h × 2^64 / homes), home after home without a division:
// 2^64 = q × homes + r, so it is h × q + ceil(h × r / homes), whose fraction steps by r.
class HomeStarts {
 public:
  explicit HomeStarts(std::size_t homes)
      : homes_(homes),
        step_(static_cast<std::uint64_t>((Wide{1} << 64) / homes)),
        rest_(static_cast<std::uint64_t>((Wide{1} << 64) % homes)) {}
  // Homes come in order, never back.
  std::uint64_t start_of(std::size_t h) {
    for (; at_ < h; ++at_) {
      fraction_ += rest_;
      if (fraction_ >= homes_) {
        fraction_ -= homes_;
        ++whole_;
      }
    }
    return static_cast<std::uint64_t>(h) * step_ + whole_ + (fraction_ != 0 ? 1 : 0);
  }

 private:
  std::uint64_t homes_, step_, rest_;
  std::size_t at_ = 0;
  std::uint64_t whole_ = 0, fraction_ = 0;  // h × rest_ = whole_ × homes_ + fraction_
};
}  // namespace

FingerprintSet::FingerprintSet(std::size_t initial_slots) { shape(std::max(initial_slots, kMinHomes)); }

void FingerprintSet::shape(std::size_t homes) {
  size_fields(homes);
  bytes_.assign(bytes_of(homes), 0);
  size_ = 0;
}

void FingerprintSet::size_fields(std::size_t homes) {
  homes_ = homes;
  slots_ = homes + kMaxDistance;
  high_bits_ = high_bits_for(homes);
  width_ = width_for(homes);
  high_mask_ = ones(high_bits_);
  slot_mask_ = ones(width_);
  limit_ = limit_for(homes);
}

FingerprintSet::Key FingerprintSet::stored_key(const Fingerprint& fingerprint) const {
  return (Wide{fingerprint.high} & high_mask_) | (Wide{fingerprint.low & 0xFFFFu} << high_bits_);
}

FingerprintSet::Slot FingerprintSet::get(std::size_t i) const {
  const std::size_t bit = i * static_cast<std::size_t>(width_);
  Wide word;
  std::memcpy(&word, bytes_.data() + (bit >> 3), sizeof word);
  word = (word >> (bit & 7)) & slot_mask_;
  return Slot{word >> kDistanceBits, static_cast<std::uint32_t>(word) & ((1u << kDistanceBits) - 1)};
}

void FingerprintSet::put(std::size_t i, const Slot& slot) {
  const std::size_t bit = i * static_cast<std::size_t>(width_);
  const int shift = static_cast<int>(bit & 7);
  Wide word;
  std::memcpy(&word, bytes_.data() + (bit >> 3), sizeof word);
  const Wide value = (slot.key << kDistanceBits) | slot.distance;
  word = (word & ~(slot_mask_ << shift)) | (value << shift);
  std::memcpy(bytes_.data() + (bit >> 3), &word, sizeof word);
}

std::size_t FingerprintSet::find(std::size_t h, Key key, std::uint32_t& distance) const {
  for (std::size_t i = h;; ++i) {  // ends at the empty slot past slots_ at the latest
    const Slot slot = get(i);
    const std::uint32_t d = static_cast<std::uint32_t>(i - h) + 1;
    if (slot.distance < d) {  // empty, or the first slot of a later home: the key goes here
      distance = d;
      return i;
    }
    if (slot.distance == d && slot.key == key) return kFound;
  }
}

bool FingerprintSet::place_at(std::size_t i, Key key, std::uint32_t distance) {
  if (distance > kMaxDistance + 1) return false;
  // Carries each slot one up until an empty one takes the last: one pass, undone in the rare
  // case where a slot would go too far. (The last slot can hold only a slot at its greatest
  // distance, so the pass stops there at the latest.)
  Slot carried{key, distance};
  std::size_t j = i;
  for (;; ++j) {
    const Slot here = get(j);
    if (here.distance > kMaxDistance) break;  // it would go one further
    put(j, carried);
    if (here.distance == 0) return true;
    carried = Slot{here.key, here.distance + 1};
  }
  // Slots i .. j-1 hold the new key and the old ones of i .. j-2, each one further; `carried`
  // is the old one of j-1. Put each back.
  if (j == i) return false;
  for (std::size_t k = i; k + 1 < j; ++k) {
    Slot moved = get(k + 1);
    --moved.distance;
    put(k, moved);
  }
  put(j - 1, Slot{carried.key, carried.distance - 1});
  return false;
}

bool FingerprintSet::insert(const Fingerprint& fingerprint) {
  const std::size_t h = home(fingerprint.high);
  const Wide key = stored_key(fingerprint);
  std::uint32_t distance = 0;
  const std::size_t i = find(h, key, distance);
  if (i == kFound) return false;
  if (size_ + 1 > limit_ || !place_at(i, key, distance)) {
    grow(size_ + 1);
    place(fingerprint, size_ + 1);
  }
  ++size_;
  return true;
}

void FingerprintSet::place(const Fingerprint& fingerprint, std::size_t count) {
  for (;;) {
    const std::size_t h = home(fingerprint.high);
    const Wide key = stored_key(fingerprint);
    std::uint32_t distance = 0;
    const std::size_t i = find(h, key, distance);
    if (i != kFound && place_at(i, key, distance)) return;
    grow(count);
  }
}

void FingerprintSet::grow(std::size_t count) {
  // Hashed fingerprints crowd no home; fingerprints that do would make the table grow without
  // end, so past this it refuses them.
  if (homes_ > 16 * count + (std::size_t{1} << 20)) {
    throw std::length_error("fingerprints crowd into too few homes of the seen-set: not a hash's");
  }
  rehash(static_cast<std::size_t>(static_cast<double>(homes_) * kGrowth), count);
}

bool FingerprintSet::contains(const Fingerprint& fingerprint) const {
  std::uint32_t distance = 0;
  return find(home(fingerprint.high), stored_key(fingerprint), distance) == kFound;
}

template <class Visit>
void FingerprintSet::for_each(Visit&& visit) const {
  HomeStarts starts(homes_);
  for (std::size_t i = 0; i < slots_; ++i) {
    const Slot slot = get(i);
    if (slot.distance == 0) continue;
    const std::size_t h = i - (slot.distance - 1);
    // The one high word of home h whose low L bits are the slot's.
    const std::uint64_t start = starts.start_of(h);
    const std::uint64_t low_bits = static_cast<std::uint64_t>(slot.key & high_mask_);
    const Fingerprint fingerprint{start + static_cast<std::uint64_t>((low_bits - start) & high_mask_),
                                  static_cast<std::uint64_t>(slot.key >> high_bits_)};
    visit(fingerprint);
  }
}

void FingerprintSet::rehash(std::size_t homes, std::size_t count) {
  FingerprintSet grown(homes);
  const std::size_t size = size_;
  for_each([&](const Fingerprint& fingerprint) { grown.place(fingerprint, count); });
  *this = std::move(grown);
  size_ = size;
}

std::size_t FingerprintSet::bytes_after_growth() const {
  return bytes_of(static_cast<std::size_t>(static_cast<double>(homes_) * kGrowth));
}

std::size_t FingerprintSet::bytes_for(std::size_t n) const { return std::max(bytes_of(homes_for(n)), bytes_.size()); }

void FingerprintSet::reserve(std::size_t n) {
  const std::size_t homes = homes_for(n);
  if (homes > homes_) rehash(homes, std::max(n, size_));
}

void FingerprintSet::assign(std::size_t home_slots, std::vector<std::uint8_t> bytes) {
  auto refuse = [] { throw std::invalid_argument("these are not the slots of a fingerprint set"); };
  if (home_slots < kMinHomes || home_slots > (std::size_t{1} << 40) || bytes.size() != bytes_of(home_slots)) refuse();
  FingerprintSet table(kMinHomes);
  table.size_fields(home_slots);  // the bytes are the snapshot's: no table of that size allocated first
  table.bytes_ = std::move(bytes);
  // Every slot within its bounds, homes in order.
  std::size_t size = 0;
  std::size_t last_home = 0;
  for (std::size_t i = 0; i < table.slots_; ++i) {
    const std::uint32_t d = table.get(i).distance;
    if (d == 0) continue;
    if (d - 1 > i || d - 1 > kMaxDistance || (d > 1 && table.get(i - 1).distance == 0)) refuse();
    const std::size_t h = i - (d - 1);
    if (h >= home_slots || h < last_home) refuse();
    last_home = h;
    ++size;
  }
  if (size > table.limit_ || table.get(table.slots_).distance != 0) refuse();
  table.size_ = size;
  *this = std::move(table);
}

}  // namespace fp8sm::explorer
