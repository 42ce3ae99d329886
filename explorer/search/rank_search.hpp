// One rank's part of a search (all of it with one rank): the engine behind run_engine
// (engine.hpp), which knows the model only through search_model.hpp's interface. Internal to
// the search library.
//
// A layer is expanded either alone (rank_search.cpp: each parent's chains merged as they come,
// in key order) or in rounds with the other ranks (rank_rounds.cpp: successors sent to their
// owners, merged there in key order); what a successor counts is the same code either way
// (rank_search.cpp). Snapshots are written and read in rank_snapshots.cpp, a layer's
// programs gathered for --programs in rank_programs.cpp, and the seen-set sized for a layer in
// rank_memory.cpp.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "explorer/search/layer_expansion.hpp"
#include "explorer/search/ranks.hpp"
#include "explorer/search/search_model.hpp"
#include "explorer/search/search_state.hpp"
#include "explorer/search/search_types.hpp"
#include "explorer/search/snapshot.hpp"
#include "explorer/search/successor_messages.hpp"
#include "explorer/search/successor_record.hpp"

namespace fp8sm::explorer {

// Parents each rank expands per round of a multi-rank layer: a few hundred kilobytes of
// successors to send, and as many to receive and merge, in buffers kept from round to round.
inline constexpr std::size_t kRoundParents = 256;
// Parents expanded between two calls that let messages move (Ranks::progress).
inline constexpr std::size_t kProgressEvery = 8;
// Rounds a rank expands before it merges the first (and after that, ahead of the one it merges).
inline constexpr std::size_t kRoundsAhead = 4;
inline constexpr std::uint64_t kNoKey = std::numeric_limits<std::uint64_t>::max();

// The status byte that starts every message of a round (several ranks): successors follow; the
// sending rank failed, and why follows; or it was interrupted (EngineOptions::interrupt), and
// nothing follows. Every rank reads the same statuses for a round, so all stop at the same one.
enum RoundStatus : std::uint8_t { kRoundSuccessors = 0, kRoundFailed = 1, kRoundInterrupted = 2 };

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
  RankSearch(const EngineOptions& options, const SearchModel& model, Ranks& ranks, const ProgressCallback& progress);

  SearchResult run();

 private:
  static double seconds_since(std::chrono::steady_clock::time_point start);
  int me() const { return ranks_.rank(); }
  bool alone() const { return ranks_.size() == 1; }
  // Whether this process was asked to stop (EngineOptions::interrupt).
  bool interrupt_requested() const {
    return options_.interrupt != nullptr && options_.interrupt->load(std::memory_order_relaxed);
  }

  // ---- the root and the end of a layer -------------------------------------------------------

  // The initial state: stored by its owner, which also judges its end.
  void start_at_root();

  // Layer `depth` is complete: its counts summed over the ranks, its states the frontier.
  void finish_layer(int depth);

  // A search to the fixpoint: the frontier's keys renumbered, in the same order, so that keys
  // never run out of layers; and the depth its children's keys are made at.
  void rekey_frontier();
  int key_depth(int depth) const { return options_.until_fixpoint ? kMaxKeyLayers - 1 : depth; }

  // ---- --programs (rank_programs.cpp) -------------------------------------------------------

  // EngineOptions::programs: the layer's top-level states (programs_), every rank's, handed to
  // it on rank 0 in key order; then forgotten.
  void list_programs(int depth);

  // ---- expanding a layer ----------------------------------------------------------------------

  void expand_layer(int depth);

  // One rank: the chains of each parent merged as they come, in key order (the one-process
  // search), and a budget stops at the very state that reaches it.
  void expand_alone(int depth);

  void merge_alone(const SuccessorRecord& record, int length);

  // Several ranks: the layer in rounds of parents every rank agrees on (by key). Each round's
  // successors go to their owners as one message per rank, which the owners merge in key
  // order. A rank expands kRoundsAhead rounds ahead of the round it merges, so a round that
  // took another rank longer costs no waiting unless that rank falls that far behind. A message
  // starts with a RoundStatus: successors follow; the rank failed (a program past the flat
  // state's capacity, memory), and why; or it was interrupted. A round in which some rank failed
  // or was interrupted is merged by none: every rank stops there.
  void expand_in_rounds(int depth);

  // The parents [begin, end) expanded, their successors packed for their owners, each message
  // after its status byte; or, once the expansion has failed, that failure; or, once this
  // process was asked to stop, nothing but that.
  void expand_round(std::size_t begin, std::size_t end, int depth, std::vector<Bytes>& out, std::string& failure);

  // The rounds sent and not merged, which no rank will merge now (every rank stops at the same
  // round): received and dropped, so no message is left in flight when the search ends.
  void drain(std::deque<Bytes>& own);

  // Keys that split the layer into rounds of about kRoundParents parents per rank: every rank's
  // every kRoundParents-th key, every ranks-th of those.
  std::vector<std::uint64_t> round_thresholds();

  // A round's successors, from every rank, merged in key order: whole groups by their parents'
  // keys (successor_messages.hpp). First every state is looked up and stored (a state is new if
  // no smaller key reached it: exactly the one-process search's rule, since a state's every
  // discovery comes to its owner); then, under a budget, the ranks agree where it cuts the
  // layer, if it does; then what each successor did is counted, up to the cut. Without a budget
  // there is no cut, and each successor is counted as it is stored.
  void merge_round(const std::vector<Bytes>& in, int depth);

  // Where a group lies: in which rank's message, at which byte.
  struct GroupAt {
    std::uint32_t stream;
    std::uint32_t offset;
  };

  // The groups of the round's messages (each rank's in key order) merged into one key order
  // (order_): by looking at every rank's next group for a few ranks, through a heap for many.
  void group_order(std::vector<SuccessorGroups>& streams);

  // Where the round's budgets cut the layer, the same on every rank: the first state (by key)
  // some rank could not store within its memory share, or the state that brings the stored
  // count to --max-states (found by a search over keys: the k-th smallest new key of all ranks).
  // `stored`: the round's records (records_) this rank stored before its memory share ran out
  // (all of them if it did not).
  Cut agree_cut(std::size_t stored);

  // ---- what a successor counts --------------------------------------------------------------

  // A new state of the next layer: kept in the next frontier if the search goes past it, and
  // for --programs if it is a complete program.
  void remember(const SuccessorRecord& record, int length);

  // Everything a successor makes count, up to a cut (`at`: the cut falls on this successor; at
  // the memory budget, it did not fit and counts for nothing).
  void commit(const SuccessorRecord& record, bool is_new, StopReason at, int length);

  // The transition that reached the successor, where its chain starts (a later link's is
  // counted by count_next), and its verdict.
  void count_transition(const SuccessorRecord& record, int length);

  // A state stored for the first time: counted, and its end judged at top level.
  void count_new(const SuccessorRecord& record, int length);

  // The next link of a new state's chain: its transition counts (a state seen before had its
  // chain counted when first seen).
  void count_next(const SuccessorRecord& record, int length);

  // One transition's rows: each counts once for it, and the first transition to take a row is
  // its witness (the program of the successor, closed).
  void count_rows(const RowSpan& rows, std::uint64_t key, const SuccessorRecord& record, int length);

  // A transition or a program end violated something: the state it reached counts as violating,
  // and the first program to do so is a candidate counterexample.
  void record_violations(spec::InvariantSet violations, const Fingerprint& fingerprint, int length, std::uint64_t key,
                         Judged judged, const SearchPath& path);

  // ---- memory (rank_memory.cpp) ----------------------------------------------------------------

  // Sizes the seen-set once for the states the next layer is expected to add, when that fits
  // the memory budget. A layer adds more states per parent than the one before (longer
  // programs have more ways to differ), so the last layer's rate is carried forward with its
  // growth (at most 1.5x), and a twentieth more. Underestimating costs a rehash of the whole
  // table late in the layer (in place, but a pass over every state stored). Where that does not
  // fit the budget, the last layer of a one-rank search to a depth is sized late (grow_late_):
  // at its start, the largest table that fits beside its parents, 95 % full.
  void reserve_for_next_layer();

  // The last layer, sized late: parent `index`'s `successors` may not fit the table, so it is
  // sized for the layer's states as the parents read so far project them, 95 % full, or as
  // many as fit the budget.
  void grow_for_rest_of_layer(std::size_t index, std::size_t successors);

  // This rank's share of --max-memory less what its frontiers and violation sets hold.
  std::size_t budget_for_seen_set() const;

  std::size_t stored_bytes() const { return state_.stored_bytes() + next_.bytes(); }

  // States a round has yet to put into each invariant's violation set (merge_round counts them
  // as it stores the round's states, and puts them in once the ranks agree on the cut).
  using ViolationCounts = std::array<std::uint64_t, spec::kAllInvariants.size()>;

  // The invariants whose violation sets counting `record` puts its state in, if it is not there
  // yet: its transition's violations, and its end's if its state is new (is_new) at top level;
  // of those checked.
  spec::InvariantSet violations_counted(const SuccessorRecord& record, bool is_new) const;

  // Whether counting `record`, of layer `length`, would take this rank's tables and frontiers
  // past its share of --max-memory: for a new state (is_new), the seen-set (while it grows: the
  // grown table and the old one's metadata) and the next frontier; for any, the violation sets
  // it goes into (while they grow: `violations`, violations_counted's), `pending` more states each
  // already on their way to them.
  bool over_memory_budget(const SuccessorRecord& record, int length, bool is_new, const spec::InvariantSet& violations,
                          const ViolationCounts& pending) const;

  // Makes room in the violation sets for `pending` more states each, at once (merge_round: as
  // over_memory_budget reckoned them).
  void reserve_violation_sets(const ViolationCounts& pending);

  // ---- snapshots ------------------------------------------------------------------------------

  // The snapshot's identity (this search's) and DIR made ready; a new search refuses a DIR
  // that holds a snapshot.
  void open_snapshot_dir();

  // Every rank's file of the layer just completed, then the manifest naming it (rank 0), then
  // the files of the layer before are removed.
  void save_snapshot();

  void resume();

  // ---- the result -----------------------------------------------------------------------------

  SearchResult finish(std::chrono::steady_clock::time_point start);

  // Why the find violated `invariant`: its transition (or program end) replayed on a state rebuilt
  // from the root; deterministic, so the same verdict as when it was found.
  std::string reason_of(const Find& find, spec::Invariant invariant) const;

  const EngineOptions options_;
  const SearchModel& model_;
  Ranks& ranks_;
  ProgressCallback progress_;
  spec::InvariantSet checks_;
  StatementCode close_;
  std::unique_ptr<ModelCursor> cursor_;  // for the root and the reasons of the counterexamples
  std::unique_ptr<LayerExpansion> expansion_;
  SnapshotIdentity identity_;
  RankState state_;
  Frontier next_;  // the layer being built
  Frontier programs_;  // with EngineOptions::programs: its new top-level states, in key order
  // A round's successors as merged (several ranks): where each group lies, in key order; the
  // successors in that order (their rows point into the messages); which were new.
  std::vector<GroupAt> order_;
  std::vector<SuccessorRecord> records_;
  std::vector<std::uint8_t> is_new_;
  std::uint64_t memory_share_ = 0;
  // The layer's seen-set is sized late, to fit the budget (reserve_for_next_layer): the states
  // expected at its start, and those stored then.
  bool grow_late_ = false;
  std::size_t layer_expected_ = 0;
  std::size_t layer_start_stored_ = 0;
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

}  // namespace fp8sm::explorer
