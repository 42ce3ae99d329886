#include "statemachine/encoder.hpp"

#include <algorithm>
#include <array>
#include <stdexcept>

namespace fp8sm::statemachine {

void Encoder::put_id(IdKind kind, std::uint32_t id) {
  const std::size_t entry = in_keyed_ ? keyed_.size() - 1 : kNoEntry;
  ids_.push_back(IdSlot{entry, target().size(), kind, id});
  put(id, 4);
}

void Encoder::begin_keyed(IdKind kind, std::uint32_t id) {
  if (in_keyed_) throw std::logic_error("Encoder: keyed entries do not nest");
  keyed_.push_back(KeyedEntry{kind, id, {}});
  in_keyed_ = true;
}

void Encoder::end_keyed() {
  if (!in_keyed_) throw std::logic_error("Encoder: end_keyed without begin_keyed");
  in_keyed_ = false;
}

void Encoder::finish(std::string& out) {
  if (in_keyed_) throw std::logic_error("Encoder: finish inside a keyed entry");
  // Per kind, the ids mentioned by the encoding proper and by the entries kept, closed under
  // "a kept entry's mentions are mentions"; then an id's rank is its position, sorted.
  std::array<std::vector<std::uint32_t>, kIdKinds> mentioned;
  auto is_mentioned = [&](IdKind kind, std::uint32_t id) {
    const auto& ids = mentioned[static_cast<int>(kind)];
    return std::find(ids.begin(), ids.end(), id) != ids.end();
  };
  for (const IdSlot& slot : ids_) {
    if (slot.entry == kNoEntry) mentioned[static_cast<int>(slot.kind)].push_back(slot.id);
  }
  for (KeyedEntry& entry : keyed_) entry.kept = !canonical_;
  for (bool grew = canonical_; grew;) {
    grew = false;
    for (KeyedEntry& entry : keyed_) {
      if (entry.kept || !is_mentioned(entry.kind, entry.id)) continue;
      entry.kept = true;
      grew = true;
      const std::size_t index = static_cast<std::size_t>(&entry - keyed_.data());
      for (const IdSlot& slot : ids_) {
        if (slot.entry == index) mentioned[static_cast<int>(slot.kind)].push_back(slot.id);
      }
    }
  }
  for (auto& ids : mentioned) {
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  }
  auto rank = [&](IdKind kind, std::uint32_t id) {
    const auto& ids = mentioned[static_cast<int>(kind)];
    return static_cast<std::uint32_t>(std::lower_bound(ids.begin(), ids.end(), id) - ids.begin());
  };

  if (canonical_) {
    for (const IdSlot& slot : ids_) {
      if (slot.entry != kNoEntry && !keyed_[slot.entry].kept) continue;
      std::string& bytes = slot.entry == kNoEntry ? bytes_ : keyed_[slot.entry].bytes;
      const std::uint32_t renamed = rank(slot.kind, slot.id);
      std::memcpy(&bytes[slot.offset], &renamed, sizeof renamed);
    }
    // Kept entries in (kind, id) order, whatever order the tables were walked in; ranks keep
    // the order of ids.
    std::stable_sort(keyed_.begin(), keyed_.end(), [](const KeyedEntry& a, const KeyedEntry& b) {
      return a.kind != b.kind ? a.kind < b.kind : a.id < b.id;
    });
  }
  std::uint32_t kept = 0;
  std::string entries;
  for (const KeyedEntry& entry : keyed_) {
    if (!entry.kept) continue;  // nothing refers to its id any more
    ++kept;
    const std::uint32_t id = canonical_ ? rank(entry.kind, entry.id) : entry.id;
    const auto size = static_cast<std::uint32_t>(entry.bytes.size());
    entries.push_back(static_cast<char>(entry.kind));
    entries.append(reinterpret_cast<const char*>(&id), sizeof id);
    entries.append(reinterpret_cast<const char*>(&size), sizeof size);
    entries += entry.bytes;
  }
  out += bytes_;
  out.append(reinterpret_cast<const char*>(&kept), sizeof kept);
  out += entries;
  bytes_.clear();
  ids_.clear();
  keyed_.clear();
}

}  // namespace fp8sm::statemachine
