#include "statemachine/encoder.hpp"

#include <stdexcept>

namespace fp8sm::statemachine {

void Encoder::put_id(IdKind kind, std::uint32_t id) {
  const std::size_t entry = in_keyed_ ? keyed_.size() - 1 : kNoEntry;
  ids_.push_back(IdSlot{entry, target().size(), kind, id});
  put(id, 4);
}

void Encoder::begin_keyed(IdKind kind, std::uint32_t id) {
  if (in_keyed_) throw std::logic_error("Encoder: keyed entries do not nest");
  keyed_.push_back(KeyedEntry{kind, id, keyed_bytes_.size(), 0, ids_.size(), 0, false});
  in_keyed_ = true;
}

void Encoder::end_keyed() {
  if (!in_keyed_) throw std::logic_error("Encoder: end_keyed without begin_keyed");
  keyed_.back().end = keyed_bytes_.size();
  keyed_.back().end_slot = ids_.size();
  in_keyed_ = false;
}

bool Encoder::mentioned(IdKind kind, std::uint32_t id) const {
  const auto& ids = mentioned_[static_cast<int>(kind)];
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

void Encoder::finish(std::string& out) {
  if (in_keyed_) throw std::logic_error("Encoder: finish inside a keyed entry");
  // Per kind, the ids mentioned by the encoding proper and by the entries kept, closed under
  // "a kept entry's mentions are mentions"; then an id's rank is its position, sorted.
  for (auto& ids : mentioned_) ids.clear();
  for (const IdSlot& slot : ids_) {
    if (slot.entry == kNoEntry) mentioned_[static_cast<int>(slot.kind)].push_back(slot.id);
  }
  for (KeyedEntry& entry : keyed_) entry.kept = !canonical_;
  for (bool grew = canonical_; grew;) {
    grew = false;
    for (KeyedEntry& entry : keyed_) {
      if (entry.kept || !mentioned(entry.kind, entry.id)) continue;
      entry.kept = true;
      grew = true;
      for (std::size_t i = entry.first_slot; i < entry.end_slot; ++i) {
        mentioned_[static_cast<int>(ids_[i].kind)].push_back(ids_[i].id);
      }
    }
  }
  for (auto& ids : mentioned_) {
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  }
  auto rank = [&](IdKind kind, std::uint32_t id) {
    const auto& ids = mentioned_[static_cast<int>(kind)];
    return static_cast<std::uint32_t>(std::lower_bound(ids.begin(), ids.end(), id) - ids.begin());
  };

  order_.clear();
  for (std::size_t i = 0; i < keyed_.size(); ++i) {
    if (keyed_[i].kept) order_.push_back(i);
  }
  if (canonical_) {
    for (const IdSlot& slot : ids_) {
      if (slot.entry != kNoEntry && !keyed_[slot.entry].kept) continue;
      char* at = slot.entry == kNoEntry ? bytes_.at(slot.offset) : keyed_bytes_.at(slot.offset);
      const std::uint32_t renamed = rank(slot.kind, slot.id);
      std::memcpy(at, &renamed, sizeof renamed);
    }
    // Kept entries in (kind, id) order, whatever order the tables were walked in; ranks keep
    // the order of ids. The tables are walked almost in that order already, so an insertion
    // sort (stable, and unlike std::stable_sort it allocates no buffer) does little work.
    auto before = [&](std::size_t a, std::size_t b) {
      const KeyedEntry& x = keyed_[a];
      const KeyedEntry& y = keyed_[b];
      return x.kind != y.kind ? x.kind < y.kind : x.id < y.id;
    };
    for (std::size_t i = 1; i < order_.size(); ++i) {
      const std::size_t moving = order_[i];
      std::size_t j = i;
      for (; j > 0 && before(moving, order_[j - 1]); --j) order_[j] = order_[j - 1];
      order_[j] = moving;
    }
  }
  // One resize, then copies: the encoding is built on the search's hot path.
  std::size_t total = bytes_.size() + sizeof(std::uint32_t);
  for (std::size_t i : order_) total += 1 + 2 * sizeof(std::uint32_t) + (keyed_[i].end - keyed_[i].begin);
  const std::size_t start = out.size();
  out.resize(start + total);
  char* to = &out[start];
  auto write = [&to](const void* from, std::size_t n) {
    std::memcpy(to, from, n);
    to += n;
  };
  write(bytes_.data(), bytes_.size());
  const auto kept = static_cast<std::uint32_t>(order_.size());
  write(&kept, sizeof kept);
  for (std::size_t i : order_) {
    const KeyedEntry& entry = keyed_[i];
    const std::uint32_t id = canonical_ ? rank(entry.kind, entry.id) : entry.id;
    const auto size = static_cast<std::uint32_t>(entry.end - entry.begin);
    const auto kind = static_cast<char>(entry.kind);
    write(&kind, 1);
    write(&id, sizeof id);
    write(&size, sizeof size);
    write(keyed_bytes_.data() + entry.begin, size);
  }
  bytes_.clear();
  keyed_bytes_.clear();
  ids_.clear();
  keyed_.clear();
}

}  // namespace fp8sm::statemachine
