#include "explorer/search.hpp"

#include <xxhash.h>
#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <deque>
#include <fstream>
#include <limits>
#include <memory>
#include <new>
#include <queue>
#include <stdexcept>

#include "explorer/layer_expansion.hpp"
#include "explorer/model_state.hpp"
#include "explorer/ranks.hpp"
#include "explorer/search_state.hpp"
#include "explorer/snapshot.hpp"
#include "explorer/successor_messages.hpp"
#include "explorer/successor_record.hpp"
#include "explorer/test_faults.hpp"
#include "statemachine/machine.hpp"

namespace fp8sm::explorer {

using spec::Statement;

namespace {

// Parents each rank expands per round of a multi-rank layer: a few hundred kilobytes of
// successors to send, and as many to receive and merge, in buffers kept from round to round.
constexpr std::size_t kRoundParents = 256;
constexpr std::uint64_t kNoKey = std::numeric_limits<std::uint64_t>::max();
// Parents expanded between two calls that let messages move (Ranks::progress).
constexpr std::size_t kProgressEvery = 8;
// Rounds a rank expands before it merges the first (and after that, ahead of the one it merges).
constexpr std::size_t kRoundsAhead = 4;

std::uint64_t peak_memory_bytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoull(line.substr(6)) * 1024u;
  }
  return 0;
}

// Runs `body` on every rank and agrees on how it went: if it threw on any rank, it throws on
// every rank (a rank alone rethrows its own exception; several throw a RankFailure naming the
// lowest rank that failed, with its message), so no rank is left waiting in a collective.
template <class Body>
void agreed(Ranks& ranks, Body&& body) {
  if (ranks.size() == 1) {
    body();
    return;
  }
  std::string error;
  try {
    body();
  } catch (const std::bad_alloc&) {
    error = "out of memory (--max-memory stops a search cleanly)";
  } catch (const std::exception& e) {
    error = e.what();
    if (error.empty()) error = "an exception";
  } catch (...) {
    error = "an unknown exception";
  }
  if (ranks.max(error.empty() ? 0 : 1) == 0) return;
  const std::vector<Bytes> errors = ranks.all_gather(Bytes(error.begin(), error.end()));
  for (std::size_t r = 0; r < errors.size(); ++r) {
    if (!errors[r].empty()) {
      throw RankFailure(fmt::format("rank {} of {}: {}", r, ranks.size(), std::string(errors[r].begin(), errors[r].end())));
    }
  }
}

// Who this explorer's states are: the table's rows, the flat state's size, and the
// fingerprints of the empty program and its successors. A build whose model or encoding
// differs (so its fingerprints mean other states) has another identity, whatever its version.
std::uint64_t model_identity(const SearchOptions& options, const ModelState& root) {
  XXH64_state_t* hash = XXH64_createState();
  XXH64_reset(hash, 0);
  for (const auto& row : statemachine::Machine::rows().rows()) {
    const std::string text = row.to_string();
    XXH64_update(hash, text.data(), text.size());
  }
  const std::uint64_t size = sizeof(ModelState);
  XXH64_update(hash, &size, sizeof size);
  ModelRunner runner(options.semantics, options.checks, options.canonical_ids);
  auto state = std::make_unique<ModelState>();
  std::vector<Statement> alphabet;
  next_statements(root.facts, options.alphabet, alphabet);
  std::vector<std::uint64_t> fingerprints = {runner.fingerprint(root)};
  for (const Statement& s : alphabet) {
    runner.copy(*state, root);
    runner.apply(*state, s);
    fingerprints.push_back(runner.fingerprint(*state));
  }
  XXH64_update(hash, fingerprints.data(), fingerprints.size() * sizeof(std::uint64_t));
  const std::uint64_t identity = XXH64_digest(hash);
  XXH64_freeState(hash);
  return identity;
}

// The statements of a state's path with its open blocks closed: a well-formed program.
std::vector<Statement> closed_program(const SearchPath& path) {
  std::vector<Statement> statements = path.statements();
  int open = 0;
  for (const Statement& s : statements) {
    if (spec::opens_block(s.op)) ++open;
    if (s.op == spec::Op::Close) --open;
  }
  for (; open > 0; --open) statements.push_back(close_statement());
  return statements;
}

// Where a layer's merge stops: at the state that reaches --max-states (stored, the rest of its
// chain not counted) or at the first state that does not fit --max-memory (its transition
// counted, the state not stored); nothing after it counts.
struct Cut {
  std::uint64_t key = kNoKey;
  StopReason reason = StopReason::None;
};

// One rank's part of the search (all of it with one rank).
class RankSearch {
 public:
  RankSearch(const SearchOptions& options, Ranks& ranks, const ProgressCallback& progress)
      : options_(options),
        ranks_(ranks),
        progress_(ranks.rank() == 0 ? progress : ProgressCallback{}),
        state_(options.coverage ? statemachine::Machine::rows().rows().size() : 0) {
    checks_ = options.checks;
    if (checks_.empty()) {
      for (spec::Invariant i : spec::kAllInvariants) checks_.add(i);
    }
    const std::uint64_t ranks_count = static_cast<std::uint64_t>(ranks.size());
    memory_share_ = options.max_memory / ranks_count;
    if (options.coverage) {
      state_.row_transitions.assign(state_.finds.rows(), 0);
      coverage_seen_in_.assign(state_.finds.rows(), 0);
    }
  }

  SearchResult run() {
    const auto start = std::chrono::steady_clock::now();
    root_ = std::make_unique<ModelState>();
    ModelRunner runner(options_.semantics, options_.checks, options_.canonical_ids);
    runner.initial(*root_);
    result_.carried = carried_state(options_.checks);
    if (!options_.snapshot_dir.empty()) {
      identity_ = snapshot_identity(options_, ranks_.size(), model_identity(options_, *root_));
      open_snapshot_dir();
    }
    if (options_.resume) {
      resume();
    } else {
      start_at_root(runner);
    }
    if (progress_) progress_(state_.layers.back(), seconds_since(start));
    expansion_ = std::make_unique<LayerExpansion>(options_, *root_);
    for (int depth = state_.depth_done; depth < options_.depth; ++depth) {
      reserve_for_next_layer();
      expand_layer(depth);
      if (stopped_ != StopReason::None) break;
      finish_layer(depth + 1);
      if (progress_) progress_(state_.layers.back(), seconds_since(start));
      if (!options_.snapshot_dir.empty() && depth + 1 < options_.depth) save_snapshot();
    }
    return finish(start);
  }

 private:
  static double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  int me() const { return ranks_.rank(); }
  bool alone() const { return ranks_.size() == 1; }

  // ---- the root and the end of a layer -------------------------------------------------------

  // The empty program: stored by its owner, which also judges its end.
  void start_at_root(ModelRunner& runner) {
    const std::uint64_t fingerprint = runner.fingerprint(*root_);
    if (owner_of(fingerprint, ranks_.size()) == me()) {
      state_.seen.insert(fingerprint);
      state_.frontier.push_back(FrontierEntry{});
      auto ended = std::make_unique<ModelState>();
      runner.copy(*ended, *root_);
      record_violations(runner.end_here(*ended).violations(), fingerprint, 0, 0, Judged::End, SearchPath{});
    }
    state_.distinct = 1;
    state_.layers.push_back(LayerStats{0, 1, 1, 0});
  }

  // Layer `depth` is complete: its counts summed over the ranks, its states the frontier.
  void finish_layer(int depth) {
    std::uint64_t counts[2] = {layer_new_, layer_transitions_};
    ranks_.all_reduce(counts, 2, Ranks::Reduce::Sum);
    state_.distinct += counts[0];
    state_.transitions += counts[1];
    state_.layers.push_back(LayerStats{depth, counts[0], state_.distinct, counts[1]});
    state_.depth_done = depth;
    std::swap(state_.frontier, next_);
    next_.clear();
  }

  // ---- expanding a layer ----------------------------------------------------------------------

  void expand_layer(int depth) {
    layer_new_ = 0;
    layer_transitions_ = 0;
    round_stored_global_ = state_.distinct;
    if (alone()) {
      expand_alone(depth);
    } else {
      expand_in_rounds(depth);
    }
  }

  // One rank: the chains of each parent merged as they come, in key order (the one-process
  // search), and a budget stops at the very state that reaches it.
  void expand_alone(int depth) {
    const int length = depth + 1;
    expansion_->expand(state_.frontier, 0, state_.frontier.size(), [&](std::size_t index, const Links& links) {
      constexpr std::size_t kAhead = 16;  // the table's slots asked for ahead of their lookup
      const std::size_t n = links.links.size();
      for (std::size_t i = 0; i < std::min(kAhead, n); ++i) state_.seen.prefetch(links.links[i].fingerprint);
      std::size_t i = 0;
      const FrontierEntry& parent = state_.frontier[index];
      for_each_record(parent.key, parent.path, depth, links, options_.coverage, [&](const SuccessorRecord& record) {
        if (i + kAhead < n) state_.seen.prefetch(links.links[i + kAhead].fingerprint);
        ++i;
        if (stopped_ == StopReason::None) merge_alone(record, length);
      });
      return stopped_ == StopReason::None;
    });
  }

  void merge_alone(const SuccessorRecord& record, int length) {
    count_transition(record, length);
    if (options_.max_memory != 0 && !state_.seen.contains(record.fingerprint) && over_memory_budget(length)) {
      stopped_ = StopReason::MaxMemory;
      return;
    }
    if (!state_.seen.insert(record.fingerprint)) return;
    remember(record, length);
    count_new(record, length);
    if (options_.max_states != 0 && state_.seen.size() >= options_.max_states) {
      stopped_ = StopReason::MaxStates;
      return;
    }
    count_next(record, length);
  }

  // Several ranks: the layer in rounds of parents every rank agrees on (by key). Each round's
  // successors go to their owners as one message per rank, which the owners merge in key
  // order. A rank expands kRoundsAhead rounds ahead of the round it merges, so a round that
  // took another rank longer costs no waiting unless that rank falls that far behind. A message
  // starts with a status byte: 0, successors follow; 1, the rank failed (a program past the
  // flat state's capacity, memory), and why.
  void expand_in_rounds(int depth) {
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
      for (std::size_t r = 0; r < ranks; ++r) {
        if (in[r].empty() || in[r][0] != 0) {
          drain(own);
          throw RankFailure(fmt::format("rank {} of {}: {}", r, ranks,
                                        in[r].empty() ? std::string("an empty message") : std::string(in[r].begin() + 1, in[r].end())));
        }
      }
      merge_round(in, depth);
      if (stopped_ != StopReason::None) {
        drain(own);
        return;
      }
    }
  }

  // The parents [begin, end) expanded, their successors packed for their owners, each message
  // after its status byte; or, once the expansion has failed, that failure.
  void expand_round(std::size_t begin, std::size_t end, int depth, std::vector<Bytes>& out, std::string& failure) {
    for (Bytes& message : out) message.assign(1, 0);
    if (failure.empty()) {
      try {
        test_fault("expansion", depth + 1, me());
        SuccessorPacker packer(out, options_.coverage);
        expansion_->expand(state_.frontier, begin, end, [&](std::size_t index, const Links& links) {
          const FrontierEntry& parent = state_.frontier[index];
          packer.begin_parent(parent);
          for_each_record(parent.key, parent.path, depth, links, options_.coverage, [&](const SuccessorRecord& record) {
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
      message.assign(1, 1);
      message.insert(message.end(), failure.begin(), failure.end());
    }
  }

  // The rounds sent and not merged, which no rank will merge now (every rank stops at the same
  // round): received and dropped, so no message is left in flight when the search ends.
  void drain(std::deque<Bytes>& own) {
    for (; !own.empty(); own.pop_front()) {
      for (int r = 0; r < ranks_.size(); ++r) {
        if (r != me()) ranks_.receive(r);
      }
    }
  }

  // Keys that split the layer into rounds of about kRoundParents parents per rank: every rank's
  // every kRoundParents-th key, every ranks-th of those.
  std::vector<std::uint64_t> round_thresholds() {
    Bytes samples;
    for (std::size_t i = kRoundParents - 1; i < state_.frontier.size(); i += kRoundParents) {
      const std::uint64_t key = state_.frontier[i].key;
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
  void merge_round(const std::vector<Bytes>& in, int depth) {
    const int length = depth + 1;
    const bool budget = options_.max_memory != 0 || options_.max_states != 0;
    std::vector<SuccessorGroups> streams;
    for (const Bytes& message : in) streams.emplace_back(message, 1, depth, options_.coverage);
    group_order(streams);
    records_.clear();
    for (const GroupAt& group : order_) {
      streams[group.stream].seek(group.offset);
      streams[group.stream].read_group([&](const SuccessorRecord& record) { records_.push_back(record); });
    }
    is_new_.assign(records_.size(), 0);
    std::size_t stored = 0;  // records looked up and stored; under a budget, the rest did not fit
    constexpr std::size_t kAhead = 16;  // the table's slots asked for ahead of their lookup
    for (std::size_t j = 0; j < std::min(kAhead, records_.size()); ++j) state_.seen.prefetch(records_[j].fingerprint);
    for (; stored < records_.size(); ++stored) {
      if (stored + kAhead < records_.size()) state_.seen.prefetch(records_[stored + kAhead].fingerprint);
      const SuccessorRecord& record = records_[stored];
      if (options_.max_memory != 0 && !state_.seen.contains(record.fingerprint) && over_memory_budget(length)) break;
      is_new_[stored] = state_.seen.insert(record.fingerprint) ? 1 : 0;
      if (is_new_[stored] != 0) remember(record, length);
      if (!budget) commit(record, is_new_[stored] != 0, StopReason::None, length);
    }
    if (!budget) return;
    const Cut cut = agree_cut(stored);
    for (std::size_t j = 0; j < records_.size() && records_[j].key <= cut.key; ++j) {
      commit(records_[j], is_new_[j] != 0, records_[j].key == cut.key ? cut.reason : StopReason::None, length);
    }
    stopped_ = cut.reason;
  }

  // Where a group lies: in which rank's message, at which byte.
  struct GroupAt {
    std::uint32_t stream;
    std::uint32_t offset;
  };

  // The groups of the round's messages (each rank's in key order) merged into one key order
  // (order_): by looking at every rank's next group for a few ranks, through a heap for many.
  void group_order(std::vector<SuccessorGroups>& streams) {
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
  Cut agree_cut(std::size_t stored) {
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

  // ---- what a successor counts --------------------------------------------------------------

  // A new state of the next layer: kept in the next frontier if the search goes past it.
  void remember(const SuccessorRecord& record, int length) {
    if (length < options_.depth) next_.push_back(FrontierEntry{record.key, record.path});
  }

  // Everything a successor makes count, up to a cut (`at`: the cut falls on this successor).
  void commit(const SuccessorRecord& record, bool is_new, StopReason at, int length) {
    count_transition(record, length);
    if (at == StopReason::MaxMemory || !is_new) return;
    count_new(record, length);
    if (at == StopReason::MaxStates) return;
    count_next(record, length);
  }

  // The transition that reached the successor, where its chain starts (a later link's is
  // counted by count_next), and its verdict.
  void count_transition(const SuccessorRecord& record, int length) {
    if (record.first_of_chain) {
      ++layer_transitions_;
      if (options_.coverage) count_rows(record.rows, record.key, record, length);
    }
    record_violations(record.violations, record.fingerprint, length, record.key, Judged::Transition, record.path);
  }

  // A state stored for the first time: counted, and its end judged at top level.
  void count_new(const SuccessorRecord& record, int length) {
    ++layer_new_;
    if (record.top_level) {
      record_violations(record.end_violations, record.fingerprint, length, record.key, Judged::End, record.path);
    }
  }

  // The next link of a new state's chain: its transition counts (a state seen before had its
  // chain counted when first seen).
  void count_next(const SuccessorRecord& record, int length) {
    if (record.top_level) return;
    ++layer_transitions_;
    if (options_.coverage) count_rows(record.next_rows, record.key + 1, record, length);
  }

  // One transition's rows: each counts once for it, and the first transition to take a row is
  // its witness (the program of the successor, closed).
  void count_rows(const RowSpan& rows, std::uint64_t key, const SuccessorRecord& record, int length) {
    ++coverage_serial_;
    for (std::size_t r = 0; r < rows.size(); ++r) {
      const std::uint16_t row = rows[r];
      if (coverage_seen_in_[row] == coverage_serial_) continue;
      coverage_seen_in_[row] = coverage_serial_;
      if (state_.row_transitions[row]++ == 0) {
        state_.finds.offer_row(row, Find{true, static_cast<std::uint8_t>(length), key, Judged::Transition, record.path});
      }
    }
  }

  // A transition or a program end violated something: the state it reached counts as violating,
  // and the first program to do so is a candidate counterexample.
  void record_violations(spec::InvariantSet violations, std::uint64_t fingerprint, int length, std::uint64_t key,
                         Judged judged, const SearchPath& path) {
    if (violations.empty()) return;
    for (spec::Invariant i : spec::kAllInvariants) {
      if (!violations.contains(i) || !checks_.contains(i)) continue;
      state_.violating.try_emplace(i, 16).first->second.insert(fingerprint);
      if (!state_.finds.violation(i).found) {
        state_.finds.offer_violation(i, Find{true, static_cast<std::uint8_t>(length), key, judged, path});
      }
    }
  }

  // ---- memory ---------------------------------------------------------------------------------

  // Sizes the seen-set once for the states the next layer is expected to add, when that fits
  // the memory budget. A layer adds more states per parent than the one before (longer
  // programs have more ways to differ), so the last layer's rate is carried forward with its
  // growth (at most 1.5x), and a twentieth more. Underestimating costs a rehash of the whole
  // table late in the layer, with old and new tables held at once (the peak of a deep search).
  void reserve_for_next_layer() {
    const std::size_t stored = state_.seen.size();
    const std::size_t parents = state_.frontier.size();
    if (state_.last_parents > 0) {
      const double per_parent = static_cast<double>(stored - state_.stored_before_last) /
                                static_cast<double>(state_.last_parents);
      const double growth =
          state_.per_parent_before > 0 ? std::clamp(per_parent / state_.per_parent_before, 1.0, 1.5) : 1.0;
      const auto expected = static_cast<std::size_t>(static_cast<double>(stored) +
                                                     1.05 * growth * per_parent * static_cast<double>(parents));
      if (options_.max_memory == 0 ||
          state_.seen.bytes_for(expected) + state_.stored_bytes() - state_.seen.bytes() <= memory_share_) {
        state_.seen.reserve(expected);
      }
      state_.per_parent_before = per_parent;
    }
    state_.stored_before_last = stored;
    state_.last_parents = parents;
  }

  std::size_t stored_bytes() const { return state_.stored_bytes() + next_.bytes(); }

  // Whether storing one more state of layer `length` would take this rank's tables (while the
  // seen-set grows, old and new copy together) and frontiers past its share of --max-memory.
  bool over_memory_budget(int length) const {
    std::size_t needed = stored_bytes();
    if (state_.seen.full()) needed += state_.seen.bytes_after_growth();
    if (length < options_.depth && next_.full()) needed += Frontier::chunk_bytes();
    return needed > memory_share_;
  }

  // ---- snapshots ------------------------------------------------------------------------------

  void open_snapshot_dir() {
    agreed(ranks_, [&] {
      prepare_snapshot_dir(options_.snapshot_dir);
      if (!options_.resume && me() == 0) {
        if (const auto manifest = read_manifest(options_.snapshot_dir)) {
          throw SnapshotError(fmt::format(
              "'{}' already holds a snapshot (of layer {}): resume it with --resume, or give an empty directory",
              options_.snapshot_dir, manifest->layer));
        }
      }
    });
  }

  // Every rank's file of the layer just completed, then the manifest naming it (rank 0), then
  // the files of the layer before are removed.
  void save_snapshot() {
    const int layer = state_.depth_done;
    const std::size_t ranks = static_cast<std::size_t>(ranks_.size());
    std::vector<std::uint64_t> checksums(ranks, 0);
    agreed(ranks_, [&] {
      SnapshotWriter out(rank_file(options_.snapshot_dir, layer, me(), ranks_.size()));
      save_rank_state(state_, identity_, me(), out);
      checksums[static_cast<std::size_t>(me())] = out.commit();
    });
    test_fault("rank-file-written", layer, me());
    ranks_.all_reduce(checksums.data(), ranks, Ranks::Reduce::Sum);  // each rank gave its own, zeros elsewhere
    agreed(ranks_, [&] {
      if (me() == 0) write_manifest(options_.snapshot_dir, Manifest{identity_, layer, checksums});
    });
    test_fault("manifest-written", layer, me());
    // The files of earlier layers (also those a killed run may have left behind).
    for (int earlier = 0; earlier < layer; ++earlier) remove_file(rank_file(options_.snapshot_dir, earlier, me(), ranks_.size()));
  }

  void resume() {
    int layer = 0;
    agreed(ranks_, [&] {
      const auto manifest = read_manifest(options_.snapshot_dir);
      if (!manifest) {
        throw SnapshotError(fmt::format("'{}' holds no snapshot to resume (no manifest)", options_.snapshot_dir));
      }
      check_identity(manifest->identity, identity_, fmt::format("the snapshot in '{}'", options_.snapshot_dir));
      layer = manifest->layer;
      SnapshotReader in(rank_file(options_.snapshot_dir, layer, me(), ranks_.size()));
      load_rank_state(state_, identity_, me(), layer, in);
      if (in.finish() != manifest->checksums[static_cast<std::size_t>(me())]) {
        throw SnapshotError(fmt::format("'{}' is not the file the manifest of '{}' names (their checksums differ)",
                                        in.path(), options_.snapshot_dir));
      }
    });
    result_.resumed_from_layer = layer;
  }

  // ---- the result -----------------------------------------------------------------------------

  SearchResult finish(std::chrono::steady_clock::time_point start) {
    // A stopped layer's counts are part of the totals, not of the layer table.
    std::uint64_t partial[2] = {stopped_ == StopReason::None ? 0 : layer_new_,
                                stopped_ == StopReason::None ? 0 : layer_transitions_};
    ranks_.all_reduce(partial, 2, Ranks::Reduce::Sum);
    result_.layers = state_.layers;
    result_.depth_completed = state_.depth_done;
    result_.distinct = state_.distinct + partial[0];
    result_.transitions = state_.transitions + partial[1];
    result_.complete = stopped_ == StopReason::None;
    result_.stop_reason = stopped_;
    result_.ranks = ranks_.size();
    result_.memory_share = memory_share_;
    if (stopped_ != StopReason::MaxMemory || alone()) result_.memory_stop_rank = -1;

    std::vector<std::uint64_t> violating(spec::kAllInvariants.size(), 0);
    for (const auto& [invariant, states] : state_.violating) violating[static_cast<std::size_t>(invariant)] = states.size();
    ranks_.all_reduce(violating.data(), violating.size(), Ranks::Reduce::Sum);
    for (spec::Invariant i : spec::kAllInvariants) {
      if (violating[static_cast<std::size_t>(i)] > 0) result_.violating_states[i] = violating[static_cast<std::size_t>(i)];
    }
    state_.finds.reduce(ranks_);
    for (spec::Invariant i : spec::kAllInvariants) {
      const Find& find = state_.finds.violation(i);
      if (!find.found || !checks_.contains(i)) continue;
      Counterexample example;
      example.invariant = i;
      example.length = find.length;
      example.reason = reason_of(find, i);
      example.program = program_of(closed_program(find.path), options_.alphabet);
      result_.counterexamples.push_back(std::move(example));
    }
    if (options_.coverage) {
      result_.row_transitions = state_.row_transitions;
      ranks_.all_reduce(result_.row_transitions.data(), result_.row_transitions.size(), Ranks::Reduce::Sum);
      for (std::size_t row = 0; row < state_.finds.rows(); ++row) {
        const Find& find = state_.finds.row(row);
        result_.row_witnesses.push_back(
            find.found ? RowWitness{program_of(closed_program(find.path), options_.alphabet), find.length} : RowWitness{});
      }
    }
    result_.stored_bytes = ranks_.sum(stored_bytes());
    result_.exchanged_bytes = ranks_.sum(ranks_.bytes_sent());
    const std::uint64_t peak = peak_memory_bytes();
    for (const Bytes& theirs : ranks_.all_gather(Bytes(reinterpret_cast<const std::uint8_t*>(&peak),
                                                       reinterpret_cast<const std::uint8_t*>(&peak) + sizeof peak))) {
      std::uint64_t value = 0;
      std::memcpy(&value, theirs.data(), std::min(theirs.size(), sizeof value));
      result_.peak_memory_per_rank.push_back(value);
    }
    result_.peak_memory_bytes = *std::max_element(result_.peak_memory_per_rank.begin(), result_.peak_memory_per_rank.end());
    const double n = static_cast<double>(result_.distinct);
    result_.collision_probability = std::min(1.0, n * n / std::ldexp(1.0, 65));
    result_.seconds = seconds_since(start);
    return std::move(result_);
  }

  // Why the find violated `invariant`: its transition (or program end) replayed on a state rebuilt
  // from the root; deterministic, so the same verdict as when it was found.
  std::string reason_of(const Find& find, spec::Invariant invariant) const {
    ModelRunner runner(options_.semantics, options_.checks, options_.canonical_ids);
    auto state = std::make_unique<ModelState>();
    runner.copy(*state, *root_);
    const std::vector<Statement> statements = find.path.statements();
    const std::size_t replayed = find.judged == Judged::Transition ? statements.size() - 1 : statements.size();
    for (std::size_t s = 0; s < replayed; ++s) runner.apply(*state, statements[s]);
    const Verdict& verdict = find.judged == Judged::Transition ? runner.apply(*state, statements.back())
                                                               : runner.end_here(*state);
    return verdict.reason(invariant);
  }

  const SearchOptions options_;
  Ranks& ranks_;
  ProgressCallback progress_;
  spec::InvariantSet checks_;
  std::unique_ptr<ModelState> root_;  // the empty program
  std::unique_ptr<LayerExpansion> expansion_;
  SnapshotIdentity identity_;
  RankState state_;
  Frontier next_;  // the layer being built
  // A round's successors as merged (several ranks): where each group lies, in key order; the
  // successors in that order (their rows point into the messages); which were new.
  std::vector<GroupAt> order_;
  std::vector<SuccessorRecord> records_;
  std::vector<std::uint8_t> is_new_;
  std::uint64_t memory_share_ = 0;
  std::uint64_t layer_new_ = 0;          // this rank's new states in the layer being built
  std::uint64_t layer_transitions_ = 0;  // and the transitions it counted
  std::uint64_t round_stored_global_ = 0;  // all ranks' states before the round being merged (--max-states)
  StopReason stopped_ = StopReason::None;
  SearchResult result_;
  // --coverage: the serial of the transition being counted, and per row the last one that
  // counted it.
  std::uint64_t coverage_serial_ = 0;
  std::vector<std::uint64_t> coverage_seen_in_;
};

void check_search_options(const SearchOptions& options) {
  if (options.depth > kMaxSearchDepth) {
    throw std::invalid_argument(fmt::format(
        "the search's flat states hold programs of up to {} statements (docs/explorer.md \"Capacities\"), not {}",
        kMaxSearchDepth, options.depth));
  }
  if (options.alphabet.modules > kMaxSearchModules) {
    throw std::invalid_argument(fmt::format("the search's flat states hold up to {} modules, not {}", kMaxSearchModules,
                                            options.alphabet.modules));
  }
  if (options.resume && options.snapshot_dir.empty()) {
    throw std::invalid_argument("resuming a search needs the directory of its snapshot");
  }
}

}  // namespace

SearchResult search(const SearchOptions& options, Ranks& ranks, const ProgressCallback& progress) {
  check_search_options(options);
  return RankSearch(options, ranks, progress).run();
}

SearchResult search(const SearchOptions& options, const ProgressCallback& progress) {
  SingleRank alone;
  return search(options, alone, progress);
}

}  // namespace fp8sm::explorer
