#include "explorer/search/first_finds.hpp"

#include <cstring>
#include <stdexcept>
#include <tuple>

namespace fp8sm::explorer {

bool Find::before(const Find& other) const {
  return std::make_tuple(length, key, judged) < std::make_tuple(other.length, other.key, other.judged);
}

namespace {

constexpr std::size_t kFindBytes = 1 + 1 + 8 + 1 + kMaxPathCodes;

void put_find(Bytes& out, const Find& find) {
  const std::size_t at = out.size();
  out.resize(at + kFindBytes);
  std::uint8_t* p = out.data() + at;
  p[0] = find.found ? 1 : 0;
  p[1] = find.length;
  std::memcpy(p + 2, &find.key, 8);
  p[10] = static_cast<std::uint8_t>(find.judged);
  std::memcpy(p + 11, find.path.codes(), kMaxPathCodes);
}

Find get_find(const std::uint8_t* p) {
  Find find;
  find.found = p[0] != 0;
  find.length = p[1];
  std::memcpy(&find.key, p + 2, 8);
  find.judged = p[10] == 0 ? Judged::Transition : Judged::End;
  for (int i = 0; i < kMaxPathCodes && p[11 + i] != kNoStatementCode; ++i) find.path.push(p[11 + i]);
  return find;
}

}  // namespace

Bytes FirstFinds::serialize() const {
  Bytes out;
  for (const Find& find : violations_) put_find(out, find);
  for (const Find& find : rows_) put_find(out, find);
  return out;
}

void FirstFinds::merge(const Bytes& bytes) {
  if (bytes.size() != (violations_.size() + rows_.size()) * kFindBytes) {
    throw std::runtime_error("the first finds of another rank or snapshot are for another table");
  }
  const std::uint8_t* p = bytes.data();
  for (Find& kept : violations_) {
    const Find find = get_find(p);
    if (find.found) offer(kept, find);
    p += kFindBytes;
  }
  for (Find& kept : rows_) {
    const Find find = get_find(p);
    if (find.found) offer(kept, find);
    p += kFindBytes;
  }
}

void FirstFinds::reduce(Ranks& ranks) {
  if (ranks.size() == 1) return;
  const std::vector<Bytes> all = ranks.all_gather(serialize());
  for (const Bytes& other : all) merge(other);
}

}  // namespace fp8sm::explorer
