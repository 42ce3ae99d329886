// --programs (SearchOptions::programs): a completed layer's top-level states, every rank's,
// handed to the caller on rank 0 in discovery-key order.
//
// Each rank holds its own states of the layer in key order (it merged them in that order), so
// rank 0 receives every other rank's list and merges the lists by key: the order of the
// one-process search, whatever the number of ranks. A layer's lists are freed once listed.
#include <cstring>
#include <queue>
#include <utility>

#include "explorer/search/rank_search.hpp"
#include "explorer/search/test_faults.hpp"

namespace fp8sm::explorer {

namespace {

constexpr std::size_t kEntryBytes = sizeof(std::uint64_t) + kMaxPathCodes;

void put_entry(Bytes& out, const FrontierEntry& entry) {
  const std::size_t at = out.size();
  out.resize(at + kEntryBytes);
  std::memcpy(out.data() + at, &entry.key, sizeof entry.key);
  std::memcpy(out.data() + at + sizeof entry.key, entry.path.codes(), kMaxPathCodes);
}

FrontierEntry get_entry(const std::uint8_t* p) {
  FrontierEntry entry;
  std::memcpy(&entry.key, p, sizeof entry.key);
  entry.path = SearchPath::from_codes(p + sizeof entry.key, kMaxPathCodes);
  return entry;
}

}  // namespace

void RankSearch::list_programs(int depth) {
  if (!options_.programs) return;
  // Messages of this many states; a shorter one, possibly empty, ends a rank's list.
  const std::size_t per_message = options_.programs_per_message;
  if (alone()) {
    for (std::size_t i = 0; i < programs_.size(); ++i) options_.programs(depth, programs_[i].path);
  } else if (me() != 0) {
    for (std::size_t begin = 0;; begin += per_message) {
      const std::size_t end = std::min(begin + per_message, programs_.size());
      Bytes message;
      message.reserve((end - begin) * kEntryBytes);
      for (std::size_t i = begin; i < end; ++i) put_entry(message, programs_[i]);
      ranks_.send(0, std::move(message));
      if (end - begin < per_message) break;
    }
  } else {
    // Every rank's list (this one's as it is), then the lists merged by key.
    std::vector<Frontier> lists(static_cast<std::size_t>(ranks_.size()));
    std::swap(lists[0], programs_);
    for (int r = 1; r < ranks_.size(); ++r) {
      for (;;) {
        const Bytes message = ranks_.receive(r);
        for (std::size_t at = 0; at + kEntryBytes <= message.size(); at += kEntryBytes) {
          lists[static_cast<std::size_t>(r)].push_back(get_entry(message.data() + at));
        }
        if (message.size() < per_message * kEntryBytes) break;
      }
    }
    using Head = std::pair<std::uint64_t, std::size_t>;  // key, list
    std::priority_queue<Head, std::vector<Head>, std::greater<Head>> heads;
    std::vector<std::size_t> next(lists.size(), 0);
    for (std::size_t l = 0; l < lists.size(); ++l) {
      if (!lists[l].empty()) heads.emplace(lists[l][0].key, l);
    }
    while (!heads.empty()) {
      const std::size_t l = heads.top().second;
      heads.pop();
      options_.programs(depth, lists[l][next[l]].path);
      if (++next[l] < lists[l].size()) heads.emplace(lists[l][next[l]].key, l);
    }
  }
  programs_.clear();
  test_fault("programs-listed", depth, me());
}

}  // namespace fp8sm::explorer
