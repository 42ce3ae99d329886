#include "explorer/search/successor_messages.hpp"

#include <cstring>
#include <limits>
#include <stdexcept>


namespace fp8sm::explorer {

namespace {

constexpr std::size_t kNoGroup = std::numeric_limits<std::size_t>::max();
constexpr std::size_t kGroupBytesAt = 8;  // where a group's length field is
enum Flags : std::uint8_t { kTopLevel = 1, kVerdicts = 2 };

template <class T>
void put(std::uint8_t*& p, const T& value) {
  std::memcpy(p, &value, sizeof value);
  p += sizeof value;
}

spec::InvariantSet invariant_set(std::uint16_t bits) {
  spec::InvariantSet set;
  for (spec::Invariant i : spec::kAllInvariants) {
    if ((bits & (1u << static_cast<unsigned>(i))) != 0) set.add(i);
  }
  return set;
}

}  // namespace

SuccessorPacker::SuccessorPacker(std::vector<Bytes>& messages, bool coverage)
    : messages_(messages), coverage_(coverage), open_(messages.size(), kNoGroup), records_(messages.size(), 0) {}

void SuccessorPacker::begin_parent(const FrontierEntry& parent) { parent_ = &parent; }

void SuccessorPacker::add(int owner, const SuccessorRecord& record) {
  Bytes& out = messages_[static_cast<std::size_t>(owner)];
  const auto o = static_cast<std::size_t>(owner);
  if (open_[o] == kNoGroup) {  // the parent's first record for this owner: its group's header
    const int length = parent_->path.size();
    open_[o] = out.size();
    out.resize(out.size() + 8 + 4 + 1 + static_cast<std::size_t>(length) + 2);
    std::uint8_t* p = out.data() + open_[o];
    put(p, parent_->key);
    put(p, std::uint32_t{0});  // the group's length, set by end_parent
    put(p, static_cast<std::uint8_t>(length));
    std::memcpy(p, parent_->path.codes(), static_cast<std::size_t>(length));
    p += length;
    put(p, std::uint16_t{0});  // its records, set by end_parent
  }
  const bool verdicts = !record.violations.empty() || !record.end_violations.empty();
  std::size_t size = 16 + 4 + (verdicts ? 4 : 0);
  if (coverage_) size += 4 + 2u * (record.rows.size() + record.next_rows.size());
  const std::size_t at = out.size();
  out.resize(at + size);
  std::uint8_t* p = out.data() + at;
  put(p, record.fingerprint.high);
  put(p, record.fingerprint.low);
  put(p, record.link);
  put(p, record.statement);
  put(p, record.closes);
  put(p, static_cast<std::uint8_t>((record.top_level ? kTopLevel : 0) | (verdicts ? kVerdicts : 0)));
  if (verdicts) {
    put(p, record.violations.bits());
    put(p, record.end_violations.bits());
  }
  if (coverage_) {
    for (const RowSpan* rows : {&record.rows, &record.next_rows}) {
      put(p, rows->size());
      for (std::size_t i = 0; i < rows->size(); ++i) put(p, (*rows)[i]);
    }
  }
  ++records_[o];
}

void SuccessorPacker::end_parent() {
  for (std::size_t o = 0; o < open_.size(); ++o) {
    if (open_[o] == kNoGroup) continue;
    Bytes& out = messages_[o];
    const auto bytes = static_cast<std::uint32_t>(out.size() - open_[o] - kGroupBytesAt - 4);
    std::memcpy(out.data() + open_[o] + kGroupBytesAt, &bytes, sizeof bytes);
    const std::size_t count_at = open_[o] + 8 + 4 + 1 + out[open_[o] + 12];
    std::memcpy(out.data() + count_at, &records_[o], sizeof records_[o]);
    open_[o] = kNoGroup;
    records_[o] = 0;
  }
  parent_ = nullptr;
}

SuccessorGroups::SuccessorGroups(const Bytes& message, std::size_t at, int parent_depth, bool coverage,
                                 std::uint8_t close)
    : message_(message), at_(at), parent_depth_(parent_depth), coverage_(coverage), close_(close) {}

const std::uint8_t* SuccessorGroups::take(std::size_t n) {
  if (message_.size() - at_ < n) throw std::runtime_error("a successor message ends inside a group");
  const std::uint8_t* here = message_.data() + at_;
  at_ += n;
  return here;
}

std::uint64_t SuccessorGroups::parent_key() const {
  if (message_.size() - at_ < 8) throw std::runtime_error("a successor message ends inside a group");
  std::uint64_t key;
  std::memcpy(&key, message_.data() + at_, sizeof key);
  return key;
}

void SuccessorGroups::skip_group() {
  take(8);
  std::uint32_t bytes;
  std::memcpy(&bytes, take(4), sizeof bytes);
  take(bytes);
}

std::size_t SuccessorGroups::begin_group() {
  std::memcpy(&parent_key_, take(8), sizeof parent_key_);
  std::uint32_t bytes;
  std::memcpy(&bytes, take(4), sizeof bytes);
  if (message_.size() - at_ < bytes) throw std::runtime_error("a successor message ends inside a group");
  parent_length_ = *take(1);
  if (parent_length_ >= kMaxPathCodes) throw std::runtime_error("a successor message holds a path too long");
  parent_path_ = SearchPath::from_codes(take(static_cast<std::size_t>(parent_length_)), parent_length_);
  std::uint16_t count;
  std::memcpy(&count, take(2), sizeof count);
  return count;
}

void SuccessorGroups::read_record() {
  SuccessorRecord& r = record_;
  std::memcpy(&r.fingerprint.high, take(8), sizeof r.fingerprint.high);
  std::memcpy(&r.fingerprint.low, take(8), sizeof r.fingerprint.low);
  const std::uint8_t* p = take(4);
  r.link = p[0];
  r.statement = p[1];
  r.closes = p[2];
  const std::uint8_t flags = p[3];
  if (parent_length_ + 1 + r.closes > kMaxPathCodes) throw std::runtime_error("a successor message holds a path too long");
  r.key = child_key(parent_key_, parent_depth_, r.link);
  r.path = parent_path_;
  r.path.put(parent_length_, r.statement);
  for (int c = 1; c <= r.closes; ++c) r.path.put(parent_length_ + c, close_);
  r.first_of_chain = r.closes == 0;
  r.top_level = (flags & kTopLevel) != 0;
  if ((flags & kVerdicts) != 0) {
    std::uint16_t bits[2];
    std::memcpy(bits, take(4), sizeof bits);
    r.violations = invariant_set(bits[0]);
    r.end_violations = invariant_set(bits[1]);
  } else {
    r.violations = spec::InvariantSet{};
    r.end_violations = spec::InvariantSet{};
  }
  if (coverage_) {
    for (RowSpan* rows : {&r.rows, &r.next_rows}) {
      std::uint16_t count;
      std::memcpy(&count, take(2), sizeof count);
      *rows = RowSpan(take(2u * count), count);
    }
  }
}

}  // namespace fp8sm::explorer
