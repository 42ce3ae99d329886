#include "explorer/search.hpp"

#include <xxhash.h>
#include <fmt/core.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <fstream>
#include <memory>
#include <optional>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <thread>
#include "explorer/fingerprint_set.hpp"
#include "explorer/model_state.hpp"
#include "explorer/search_tree.hpp"

namespace fp8sm::explorer {

using spec::Statement;

namespace {

constexpr std::size_t kWindowPerThread = 256;  // parents expanded ahead of the merge, per thread

std::uint64_t peak_memory_bytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoull(line.substr(6)) * 1024u;
  }
  return 0;
}

// What a worker found for one statement executed on one state, and for the blocks it may then
// close for free: a chain of states, each the previous one plus a statement; the chain ends
// at its top-level link. A link keeps which invariants were violated, not why: the search
// needs a reason once per invariant, and gets it by replaying that transition (reason_of).
struct Link {
  std::uint64_t fingerprint = 0;
  spec::InvariantSet violations;      // of the statement
  spec::InvariantSet end_violations;  // of ending the program there (top level only)
  std::uint8_t via = 0;               // pack_statement
  bool top_level = false;
  std::uint32_t rows_end = 0;         // with --coverage: where its rows end in Links::rows
};
// The chains of one parent, one after the other (reused from parent to parent), and with
// --coverage the table rows each link's transition took, link after link.
struct Links {
  std::vector<Link> links;
  std::vector<std::uint16_t> rows;
  void clear() {
    links.clear();
    rows.clear();
  }
};

// What one expanding thread works with: its own runner (the interpreters and observers, bound
// to whichever state it executes) and two flat states, the parent rebuilt from the root and
// each successor in turn, copied from the parent; nothing is allocated per successor.
struct Scratch {
  explicit Scratch(const SearchOptions& options)
      : runner(options.semantics, options.checks, options.canonical_ids),
        parent(std::make_unique<ModelState>()),
        child(std::make_unique<ModelState>()) {}
  ModelRunner runner;
  std::vector<Statement> alphabet;
  std::vector<Statement> path;
  std::unique_ptr<ModelState> parent;
  std::unique_ptr<ModelState> child;
  // The parent's parent, as last rebuilt: siblings come one after the other in a layer, so
  // a parent is most often its last statement away from it.
  std::unique_ptr<ModelState> grandparent = std::make_unique<ModelState>();
  std::uint32_t grandparent_index = SearchTree::kNoParent;
};

class Search {
 public:
  Search(const SearchOptions& options, const ProgressCallback& progress) : options_(options), progress_(progress) {
    checks_ = options.checks;
    if (checks_.empty()) {
      for (spec::Invariant i : spec::kAllInvariants) checks_.add(i);
    }
  }

  SearchResult run() {
    const auto start = std::chrono::steady_clock::now();
    // The root: the empty program, which may also end here.
    Scratch scratch(options_);
    root_ = std::make_unique<ModelState>();
    scratch.runner.initial(*root_);
    result_.carried = carried_state(options_.checks);
    if (options_.coverage) {
      const std::size_t rows = statemachine::Machine::rows().rows().size();
      result_.row_transitions.assign(rows, 0);
      result_.row_witnesses.assign(rows, RowWitness{});
      coverage_seen_in_.assign(rows, 0);
    }
    const std::uint64_t root_fp = scratch.runner.fingerprint(*root_);
    seen_.insert(root_fp);
    scratch.runner.copy(*scratch.child, *root_);
    record(scratch.runner.end_here(*scratch.child).violations(), 0, std::nullopt, root_fp, 0);
    std::vector<std::uint32_t> layer = {0};
    LayerStats stats;
    for (int depth = 0;; ++depth) {
      stats.depth = depth;
      stats.frontier = layer.size();
      stats.distinct = tree_.size();
      result_.depth_completed = depth;
      finish_layer(stats, start);
      if (depth == options_.depth || stopped_ != StopReason::None) break;
      stats = LayerStats{};
      reserve_for_next_layer(layer.size());
      layer = expand(layer, depth, stats);
      if (stopped_ != StopReason::None) {
        result_.transitions += stats.transitions;
        break;
      }
    }
    result_.complete = stopped_ == StopReason::None;
    result_.stop_reason = stopped_;
    result_.distinct = tree_.size();
    result_.stored_bytes = seen_.bytes() + tree_.bytes();
    for (const auto& [invariant, states] : violating_) result_.stored_bytes += states.bytes();
    result_.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    result_.peak_memory_bytes = peak_memory_bytes();
    const double n = static_cast<double>(result_.distinct);
    result_.collision_probability = std::min(1.0, n * n / std::ldexp(1.0, 65));
    for (auto& [invariant, states] : violating_) result_.violating_states[invariant] = states.size();
    for (auto& [invariant, example] : first_) result_.counterexamples.push_back(example);
    return std::move(result_);
  }

 private:
  // The state stored at `index`, rebuilt into `state` from the root (`tree`: a view of tree_
  // taken before the merge began adding to it).
  void rebuild(const SearchTree::View& tree, std::uint32_t index, Scratch& scratch) const {
    if (index == 0) {
      scratch.runner.copy(*scratch.parent, *root_);
      return;
    }
    const std::uint32_t up = tree.parent(index);
    if (up != scratch.grandparent_index) {
      scratch.runner.copy(*scratch.grandparent, *root_);
      tree.path(up, scratch.path);
      for (const Statement& s : scratch.path) scratch.runner.apply(*scratch.grandparent, s);
      scratch.grandparent_index = up;
    }
    scratch.runner.copy(*scratch.parent, *scratch.grandparent);
    scratch.runner.apply(*scratch.parent, tree.via(index));
  }

  // One statement on `parent`, then the blocks it leaves open closed one by one (closing is
  // free: all of these states belong to the next layer). Program ends are judged here, where
  // the state is at hand.
  // The successor is the worker's own child state, copied from the parent.
  void extend(const Statement& s, Scratch& scratch, Links& chains) const {
    ModelState& state = *scratch.child;
    scratch.runner.copy(state, *scratch.parent);
    // Rows are recorded here only: rebuilding a parent replays rows already counted.
    if (options_.coverage) scratch.runner.record_rows(&chains.rows);
    Statement via = s;
    for (;;) {
      chains.links.emplace_back();
      Link& link = chains.links.back();
      link.via = pack_statement(via);
      link.violations = scratch.runner.apply(state, via).violations();
      link.fingerprint = scratch.runner.fingerprint(state);
      link.top_level = state.facts.open.empty();
      // A top-level state ends the chain, so the state is not needed after its end verdict.
      if (link.top_level) link.end_violations = scratch.runner.end_here(state).violations();
      link.rows_end = static_cast<std::uint32_t>(chains.rows.size());
      if (link.top_level) break;
      via = close_statement();
    }
    scratch.runner.record_rows(nullptr);
  }

  // Layer d+1 from layer d. Workers rebuild and extend parents in index order (each claims the
  // next index); the calling thread is one of them and also merges the parents' chains, in
  // index order as they become ready, so numbering does not depend on the thread count.
  // Merging overlaps expansion: no thread waits for a round to finish. Workers run at most
  // `window` parents ahead of the merge, which bounds the chains held.
  std::vector<std::uint32_t> expand(const std::vector<std::uint32_t>& layer, int depth, LayerStats& stats) {
    std::vector<std::uint32_t> next;
    const int threads = std::max(1, options_.threads);
    const std::size_t n = layer.size();
    const std::size_t window = kWindowPerThread * static_cast<std::size_t>(threads);
    std::vector<Links> produced(window);
    std::unique_ptr<std::atomic<bool>[]> ready(new std::atomic<bool>[window]);
    for (std::size_t i = 0; i < window; ++i) ready[i].store(false, std::memory_order_relaxed);
    std::atomic<std::size_t> cursor{0};  // the next parent to claim
    std::atomic<std::size_t> merged{0};  // parents merged so far
    std::atomic<bool> stop{false};       // the merge stopped the search: claim nothing more
    const SearchTree::View tree = tree_.view();  // the layer's parents are all in it

    // Claims and expands one parent if one is free within the window; false if none was.
    auto expand_one = [&](Scratch& scratch) {
      std::size_t i = cursor.load(std::memory_order_relaxed);
      if (i >= n || i >= merged.load(std::memory_order_acquire) + window) return false;
      if (!cursor.compare_exchange_weak(i, i + 1, std::memory_order_relaxed)) return true;  // lost the race: retry
      rebuild(tree, layer[i], scratch);
      next_statements(scratch.parent->facts, options_.alphabet, scratch.alphabet);
      Links& out = produced[i % window];
      for (const Statement& s : scratch.alphabet) extend(s, scratch, out);
      ready[i % window].store(true, std::memory_order_release);
      return true;
    };
    // A program the flat state cannot hold (statemachine::CapacityError) stops every thread;
    // the first such error is rethrown once they have all stopped.
    std::mutex failure_mutex;
    std::exception_ptr failure;
    std::atomic<bool> failed{false};
    auto fail = [&] {
      std::lock_guard<std::mutex> lock(failure_mutex);
      if (!failure) failure = std::current_exception();
      failed.store(true, std::memory_order_release);
      stop.store(true, std::memory_order_relaxed);
    };
    auto worker = [&] {
      try {
        Scratch scratch(options_);
        while (!stop.load(std::memory_order_relaxed) && cursor.load(std::memory_order_relaxed) < n) {
          if (!expand_one(scratch)) std::this_thread::yield();  // the window is full: the merge is behind
        }
      } catch (...) {
        fail();
      }
    };
    std::vector<std::thread> pool;
    for (int t = 1; t < threads; ++t) pool.emplace_back(worker);
    try {
      Scratch scratch(options_);
      for (std::size_t m = 0; m < n && stopped_ == StopReason::None && !failed.load(std::memory_order_acquire);) {
        if (ready[m % window].load(std::memory_order_acquire)) {
          Links& links = produced[m % window];
          merge(links, layer[m], depth + 1, next, stats);
          links.clear();
          ready[m % window].store(false, std::memory_order_relaxed);
          merged.store(++m, std::memory_order_release);
        } else if (!expand_one(scratch)) {
          std::this_thread::yield();  // the next parent to merge is being expanded by a worker
        }
      }
    } catch (...) {
      fail();
    }
    stop.store(true, std::memory_order_relaxed);
    for (std::thread& t : pool) t.join();
    if (failure) std::rethrow_exception(failure);
    return next;
  }

  // Records the chains' verdicts and stores their new states. A state seen before had its own
  // closing chain stored when first seen, so the rest of its chain adds nothing.
  void merge(const Links& chains, std::uint32_t parent, int length, std::vector<std::uint32_t>& next,
             LayerStats& stats) {
    const std::vector<Link>& links = chains.links;
    std::uint32_t from = parent;  // the state the link's statement runs on
    bool skipping = false;        // the rest of a chain whose state was seen before
    constexpr std::size_t kAhead = 16;  // the table's slots asked for ahead of their lookup
    for (std::size_t i = 0; i < std::min(kAhead, links.size()); ++i) seen_.prefetch(links[i].fingerprint);
    for (std::size_t i = 0; i < links.size(); ++i) {
      const Link& link = links[i];
      if (i + kAhead < links.size()) seen_.prefetch(links[i + kAhead].fingerprint);
      if (stopped_ != StopReason::None) return;  // nothing after the stop counts, whatever the thread count
      if (!skipping) {
        if (options_.coverage) count_rows(chains.rows, i == 0 ? 0 : links[i - 1].rows_end, link, from, length);
        merge_link(link, from, length, next, stats, skipping);
      }
      if (link.top_level) {  // the chain ends: the next one starts from the parent again
        from = parent;
        skipping = false;
      }
    }
  }

  // One transition's rows, [begin, link.rows_end) of `rows`: each row it took counts once for
  // it. The first transition to take a row (in the merge's order, so a shortest program) is
  // kept as the row's witness.
  void count_rows(const std::vector<std::uint16_t>& rows, std::uint32_t begin, const Link& link, std::uint32_t from,
                  int length) {
    ++coverage_serial_;
    for (std::uint32_t r = begin; r < link.rows_end; ++r) {
      const std::uint16_t row = rows[r];
      if (coverage_seen_in_[row] == coverage_serial_) continue;
      coverage_seen_in_[row] = coverage_serial_;
      if (result_.row_transitions[row]++ == 0) {
        result_.row_witnesses[row] =
            RowWitness{program_of(path_to(from, unpack_statement(link.via)), options_.alphabet), length};
      }
    }
  }

  void merge_link(const Link& link, std::uint32_t& from, int length, std::vector<std::uint32_t>& next,
                  LayerStats& stats, bool& skipping) {
    ++stats.transitions;
    if (!link.violations.empty()) record(link.violations, from, unpack_statement(link.via), link.fingerprint, length);
    // Under a memory budget a new state is looked up first: storing it may not fit.
    if (options_.max_memory != 0 && !seen_.contains(link.fingerprint) && over_memory_budget()) {
      stopped_ = StopReason::MaxMemory;
      return;
    }
    if (!seen_.insert(link.fingerprint)) {
      skipping = true;
      return;
    }
    from = tree_.add_packed(from, link.via);
    next.push_back(from);
    if (link.top_level && !link.end_violations.empty()) {
      record(link.end_violations, from, std::nullopt, link.fingerprint, length);
    }
    if (options_.max_states != 0 && tree_.size() >= options_.max_states) stopped_ = StopReason::MaxStates;
  }

  // Sizes the seen-set once for the states the next layer is expected to add, when that fits
  // the memory budget. A layer adds more states per parent than the one before (longer
  // programs have more ways to differ), so the last layer's rate is carried forward with its
  // growth (at most 1.5x), and a twentieth more. Underestimating costs a rehash of the whole
  // table late in the layer, with old and new tables held at once (the peak of a deep search).
  void reserve_for_next_layer(std::size_t parents) {
    const std::size_t stored = tree_.size();
    if (last_parents_ > 0) {
      const double per_parent = static_cast<double>(stored - stored_before_last_) / static_cast<double>(last_parents_);
      const double growth = per_parent_before_ > 0 ? std::clamp(per_parent / per_parent_before_, 1.0, 1.5) : 1.0;
      const auto expected = static_cast<std::size_t>(static_cast<double>(stored) +
                                                     1.05 * growth * per_parent * static_cast<double>(parents));
      if (options_.max_memory == 0 || seen_.bytes_for(expected) + tree_.bytes() <= options_.max_memory) {
        seen_.reserve(expected);
      }
      per_parent_before_ = per_parent;
    }
    stored_before_last_ = stored;
    last_parents_ = parents;
  }

  // Whether storing one more state would take the table (while it grows, old and new copy
  // together) and the tree past --max-memory.
  bool over_memory_budget() const {
    std::size_t needed = seen_.bytes() + tree_.bytes();
    if (seen_.full()) needed += seen_.bytes_after_growth();
    if (tree_.full()) needed += SearchTree::chunk_bytes();
    return needed > options_.max_memory;
  }

  // A transition (parent + statement) or a program end (parent, no statement) violated
  // something: count the state it leads to, and keep the first program as the counterexample.
  void record(spec::InvariantSet violations, std::uint32_t parent, std::optional<Statement> via,
              std::uint64_t target, int length) {
    if (violations.empty()) return;
    for (spec::Invariant i : spec::kAllInvariants) {
      if (!violations.contains(i) || !checks_.contains(i)) continue;
      violating_.try_emplace(i, 16).first->second.insert(target);
      if (first_.count(i) != 0) continue;
      Counterexample example;
      example.invariant = i;
      example.length = length;
      example.reason = reason_of(parent, via, i);
      example.program = program_of(path_to(parent, via), options_.alphabet);
      first_.emplace(i, std::move(example));
    }
  }

  // Why the transition (or program end) violated `invariant`: the transition replayed on a
  // state rebuilt from the root (deterministic: the same verdict as the worker's).
  std::string reason_of(std::uint32_t parent, const std::optional<Statement>& via, spec::Invariant invariant) {
    if (!replay_) replay_ = std::make_unique<Scratch>(options_);
    Scratch& scratch = *replay_;
    rebuild(tree_.view(), parent, scratch);
    ModelState& state = *scratch.parent;
    const Verdict verdict = via ? scratch.runner.apply(state, *via) : scratch.runner.end_here(state);
    return verdict.reason(invariant);
  }

  // The statements from the root to `parent`, then `via`, then closes for the open blocks.
  std::vector<Statement> path_to(std::uint32_t parent, const std::optional<Statement>& via) const {
    std::vector<Statement> path = tree_.path(parent);
    if (via) path.push_back(*via);
    int open = 0;
    for (const Statement& s : path) {
      if (spec::opens_block(s.op)) ++open;
      if (s.op == spec::Op::Close) --open;
    }
    for (; open > 0; --open) path.push_back(close_statement());
    return path;
  }

  void finish_layer(const LayerStats& stats, std::chrono::steady_clock::time_point start) {
    result_.transitions += stats.transitions;
    result_.layers.push_back(stats);
    if (progress_) {
      progress_(stats, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
  }

  SearchOptions options_;
  ProgressCallback progress_;
  std::unique_ptr<ModelState> root_;  // the empty program
  std::unique_ptr<Scratch> replay_;    // for the reasons of counterexamples
  std::size_t stored_before_last_ = 0;  // states stored before the last layer was expanded
  std::size_t last_parents_ = 0;        // the parents it expanded
  double per_parent_before_ = 0;        // the states a parent added in the layer before the last
  spec::InvariantSet checks_;
  SearchTree tree_;
  FingerprintSet seen_;
  std::map<spec::Invariant, FingerprintSet> violating_;
  std::map<spec::Invariant, Counterexample> first_;
  StopReason stopped_ = StopReason::None;
  SearchResult result_;
  // --coverage: the serial of the transition being counted, and per row the last one that
  // counted it.
  std::uint64_t coverage_serial_ = 0;
  std::vector<std::uint64_t> coverage_seen_in_;
};

}  // namespace

SearchResult search(const SearchOptions& options, const ProgressCallback& progress) {
  if (options.depth > kMaxSearchDepth) {
    throw std::invalid_argument(fmt::format(
        "the search's flat states hold programs of up to {} statements (docs/explorer.md \"Capacities\"), not {}",
        kMaxSearchDepth, options.depth));
  }
  if (options.alphabet.modules > kMaxSearchModules) {
    throw std::invalid_argument(fmt::format("the search's flat states hold up to {} modules, not {}", kMaxSearchModules,
                                            options.alphabet.modules));
  }
  return Search(options, progress).run();
}

}  // namespace fp8sm::explorer
