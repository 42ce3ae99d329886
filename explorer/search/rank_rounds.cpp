// The search's layers on several ranks: rounds of parents every rank agrees on, successors
// sent to their owners and merged there in key order, and where a budget cuts the layer.
#include <fmt/core.h>

#include <algorithm>
#include <cstring>
#include <queue>

#include "explorer/search/rank_search.hpp"
#include "explorer/search/test_faults.hpp"

namespace fp8sm::explorer {

// Several ranks: the layer in rounds of parents every rank agrees on (by key). Each round's
// successors go to their owners as one message per rank, which the owners merge in key
// order. A rank expands kRoundsAhead rounds ahead of the round it merges, so a round that
// took another rank longer costs no waiting unless that rank falls that far behind. A message
// starts with a RoundStatus: successors follow; the rank failed (a program past the flat
// state's capacity, memory), and why; or it was interrupted. A round in which some rank failed
// or was interrupted is merged by none: every rank stops there.
void RankSearch::expand_in_rounds(int depth) {
  const std::vector<std::uint64_t> thresholds = round_thresholds();
  const std::size_t rounds = thresholds.size() + 1;
  const auto ranks = static_cast<std::size_t>(ranks_.size());
  std::vector<Bytes> out(ranks);
  std::deque<Bytes> own;  // this rank's successors for itself, by round
  std::string failure;    // why this rank's expansion failed (it then expands nothing more)
  for (std::size_t round = 0; round < rounds + kRoundsAhead; ++round) {
    if (round < rounds) {
      const std::size_t begin = round == 0 ? 0 : state_.frontier.lower_bound(thresholds[round - 1]);
      const std::size_t end = round + 1 == rounds ? state_.frontier.size() : state_.frontier.lower_bound(thresholds[round]);
      expand_round(begin, end, depth, out, failure);
      for (std::size_t r = 0; r < ranks; ++r) {
        if (r == static_cast<std::size_t>(me())) {
          own.push_back(std::move(out[r]));
        } else {
          ranks_.send(static_cast<int>(r), std::move(out[r]));
        }
        out[r] = Bytes();
      }
    }
    if (round < kRoundsAhead) continue;
    // Merge the round expanded kRoundsAhead rounds ago.
    std::vector<Bytes> in(ranks);
    for (std::size_t r = 0; r < ranks; ++r) {
      if (r == static_cast<std::size_t>(me())) {
        in[r] = std::move(own.front());
        own.pop_front();
      } else {
        in[r] = ranks_.receive(static_cast<int>(r));
      }
    }
    bool interrupted = false;
    for (std::size_t r = 0; r < ranks; ++r) {
      if (in[r].empty() || in[r][0] == kRoundFailed || in[r][0] > kRoundInterrupted) {
        drain(own);
        throw RankFailure(fmt::format("rank {} of {}: {}", r, ranks,
                                      in[r].empty() || in[r][0] != kRoundFailed
                                          ? std::string("a message that does not start with a status")
                                          : std::string(in[r].begin() + 1, in[r].end())));
      }
      interrupted = interrupted || in[r][0] == kRoundInterrupted;
    }
    if (interrupted) {
      stopped_ = StopReason::Interrupted;
      drain(own);
      return;
    }
    merge_round(in, depth);
    if (stopped_ != StopReason::None) {
      drain(own);
      return;
    }
  }
}

// The parents [begin, end) expanded, their successors packed for their owners, each message
// after its status byte; or, once the expansion has failed, that failure; or, once this
// process was asked to stop, nothing but that.
void RankSearch::expand_round(std::size_t begin, std::size_t end, int depth, std::vector<Bytes>& out, std::string& failure) {
  for (Bytes& message : out) message.assign(1, kRoundSuccessors);
  if (failure.empty()) {
    try {
      test_fault("expansion", depth + 1, me());
      if (interrupt_requested()) {
        for (Bytes& message : out) message.assign(1, kRoundInterrupted);
        return;
      }
      SuccessorPacker packer(out, options_.coverage);
      expansion_->expand(state_.frontier, begin, end, [&](std::size_t index, const Links& links) {
        const FrontierEntry parent = state_.frontier[index];
        packer.begin_parent(parent);
        for_each_record(parent.key, parent.path, key_depth(depth), links, options_.coverage, [&](const SuccessorRecord& record) {
          packer.add(owner_of(record.fingerprint, ranks_.size()), record);
        });
        packer.end_parent();
        if ((index - begin) % kProgressEvery == 0) ranks_.progress();
        return true;
      });
    } catch (const std::bad_alloc&) {
      failure = "out of memory (--max-memory stops a search cleanly)";
    } catch (const std::exception& e) {
      failure = e.what();
    }
  }
  if (failure.empty()) return;
  for (Bytes& message : out) {
    message.assign(1, kRoundFailed);
    message.insert(message.end(), failure.begin(), failure.end());
  }
}

// The rounds sent and not merged, which no rank will merge now (every rank stops at the same
// round): received and dropped, so no message is left in flight when the search ends.
void RankSearch::drain(std::deque<Bytes>& own) {
  for (; !own.empty(); own.pop_front()) {
    for (int r = 0; r < ranks_.size(); ++r) {
      if (r != me()) ranks_.receive(r);
    }
  }
}

// Keys that split the layer into rounds of about kRoundParents parents per rank: every rank's
// every kRoundParents-th key, every ranks-th of those.
std::vector<std::uint64_t> RankSearch::round_thresholds() {
  Bytes samples;
  for (std::size_t i = kRoundParents - 1; i < state_.frontier.size(); i += kRoundParents) {
    const std::uint64_t key = state_.frontier.key(i);
    const auto* bytes = reinterpret_cast<const std::uint8_t*>(&key);
    samples.insert(samples.end(), bytes, bytes + sizeof key);
  }
  std::vector<std::uint64_t> keys;
  for (const Bytes& theirs : ranks_.all_gather(samples)) {
    for (std::size_t at = 0; at + sizeof(std::uint64_t) <= theirs.size(); at += sizeof(std::uint64_t)) {
      std::uint64_t key;
      std::memcpy(&key, theirs.data() + at, sizeof key);
      keys.push_back(key);
    }
  }
  std::sort(keys.begin(), keys.end());
  std::vector<std::uint64_t> thresholds;
  for (std::size_t i = static_cast<std::size_t>(ranks_.size()) - 1; i < keys.size(); i += static_cast<std::size_t>(ranks_.size())) {
    thresholds.push_back(keys[i]);
  }
  thresholds.erase(std::unique(thresholds.begin(), thresholds.end()), thresholds.end());
  return thresholds;
}

// A round's successors, from every rank, merged in key order: whole groups by their parents'
// keys (successor_messages.hpp). First every state is looked up and stored (a state is new if
// no smaller key reached it: exactly the one-process search's rule, since a state's every
// discovery comes to its owner); then, under a budget, the ranks agree where it cuts the
// layer, if it does; then what each successor did is counted, up to the cut. Without a budget
// there is no cut, and each successor is counted as it is stored.
void RankSearch::merge_round(const std::vector<Bytes>& in, int depth) {
  const int length = depth + 1;
  const bool budget = options_.max_memory != 0 || options_.max_states != 0;
  std::vector<SuccessorGroups> streams;
  for (const Bytes& message : in) streams.emplace_back(message, 1, key_depth(depth), options_.coverage, close_);
  group_order(streams);
  records_.clear();
  for (const GroupAt& group : order_) {
    streams[group.stream].seek(group.offset);
    streams[group.stream].read_group([&](const SuccessorRecord& record) { records_.push_back(record); });
  }
  is_new_.assign(records_.size(), 0);
  std::size_t stored = 0;  // records looked up and stored; under a budget, the rest did not fit
  ViolationCounts pending{};  // under a memory budget: the states the stored records put in violation sets
  constexpr std::size_t kAhead = 16;  // the table's slots asked for ahead of their lookup
  for (std::size_t j = 0; j < std::min(kAhead, records_.size()); ++j) state_.seen.prefetch(records_[j].fingerprint);
  for (; stored < records_.size(); ++stored) {
    if (stored + kAhead < records_.size()) state_.seen.prefetch(records_[stored + kAhead].fingerprint);
    const SuccessorRecord& record = records_[stored];
    if (options_.max_memory != 0) {
      const bool is_new = !state_.seen.contains(record.fingerprint);
      const spec::InvariantSet violations = violations_counted(record, is_new);
      if (over_memory_budget(record, length, is_new, violations, pending)) break;
      for (spec::Invariant i : spec::kAllInvariants) pending[static_cast<std::size_t>(i)] += violations.contains(i) ? 1 : 0;
    }
    is_new_[stored] = state_.seen.insert(record.fingerprint) ? 1 : 0;
    if (is_new_[stored] != 0) remember(record, length);
    if (!budget) commit(record, is_new_[stored] != 0, StopReason::None, length);
  }
  if (!budget) return;
  const Cut cut = agree_cut(stored);
  // Room for what the records stored put in the violation sets (the cut takes no more than
  // they), as over_memory_budget reckoned it: the sets do not grow by fifths past it.
  if (options_.max_memory != 0) reserve_violation_sets(pending);
  for (std::size_t j = 0; j < records_.size() && records_[j].key <= cut.key; ++j) {
    commit(records_[j], is_new_[j] != 0, records_[j].key == cut.key ? cut.reason : StopReason::None, length);
  }
  stopped_ = cut.reason;
}

// The groups of the round's messages (each rank's in key order) merged into one key order
// (order_): by looking at every rank's next group for a few ranks, through a heap for many.
void RankSearch::group_order(std::vector<SuccessorGroups>& streams) {
  const std::size_t n = streams.size();
  order_.clear();
  const auto take = [&](std::size_t s) {
    order_.push_back(GroupAt{static_cast<std::uint32_t>(s), static_cast<std::uint32_t>(streams[s].position())});
    streams[s].skip_group();
  };
  if (n <= 8) {
    for (;;) {
      std::size_t best = n;
      for (std::size_t s = 0; s < n; ++s) {
        if (!streams[s].done() && (best == n || streams[s].parent_key() < streams[best].parent_key())) best = s;
      }
      if (best == n) return;
      take(best);
    }
  }
  using Head = std::pair<std::uint64_t, std::size_t>;  // parent key, stream
  std::priority_queue<Head, std::vector<Head>, std::greater<Head>> heads;
  for (std::size_t s = 0; s < n; ++s) {
    if (!streams[s].done()) heads.emplace(streams[s].parent_key(), s);
  }
  while (!heads.empty()) {
    const std::size_t s = heads.top().second;
    heads.pop();
    take(s);
    if (!streams[s].done()) heads.emplace(streams[s].parent_key(), s);
  }
}

// Where the round's budgets cut the layer, the same on every rank: the first state (by key)
// some rank could not store within its memory share, or the state that brings the stored
// count to --max-states (found by a search over keys: the k-th smallest new key of all ranks).
// `stored`: the round's records (records_) this rank stored before its memory share ran out
// (all of them if it did not).
Cut RankSearch::agree_cut(std::size_t stored) {
  Cut cut;
  if (options_.max_memory != 0) {
    const std::uint64_t mine = stored < records_.size() ? records_[stored].key : kNoKey;
    const std::uint64_t first = ranks_.min(mine);
    if (first != kNoKey) {
      cut = Cut{first, StopReason::MaxMemory};
      result_.memory_stop_rank = static_cast<int>(ranks_.min(mine == first ? static_cast<std::uint64_t>(me()) : kNoKey));
    }
  }
  if (options_.max_states == 0) return cut;
  std::vector<std::uint64_t> new_keys;  // this rank's, before the memory cut, ascending
  for (std::size_t j = 0; j < stored; ++j) {
    if (is_new_[j] != 0 && records_[j].key < cut.key) new_keys.push_back(records_[j].key);
  }
  const std::uint64_t stored_before = round_stored_global_;
  const std::uint64_t in_round = ranks_.sum(new_keys.size());
  round_stored_global_ += in_round;
  if (in_round == 0 || stored_before + in_round < options_.max_states) return cut;
  const std::uint64_t wanted = options_.max_states > stored_before ? options_.max_states - stored_before : 1;
  std::uint64_t low = 0;
  std::uint64_t high = cut.key == kNoKey ? kNoKey : cut.key - 1;
  while (low < high) {  // the smallest key k with `wanted` new keys at or below it, over all ranks
    const std::uint64_t mid = low + (high - low) / 2;
    const auto at_or_below = static_cast<std::uint64_t>(std::upper_bound(new_keys.begin(), new_keys.end(), mid) - new_keys.begin());
    if (ranks_.sum(at_or_below) >= wanted) {
      high = mid;
    } else {
      low = mid + 1;
    }
  }
  result_.memory_stop_rank = -1;
  return Cut{low, StopReason::MaxStates};
}
}  // namespace fp8sm::explorer
