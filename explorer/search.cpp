#include "explorer/search.hpp"

#include <xxhash.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <fstream>
#include <memory>
#include <optional>
#include <set>
#include <thread>
#include <unordered_set>

#include "explorer/model_state.hpp"

namespace fp8sm::explorer {

using spec::Statement;

namespace {

constexpr std::uint32_t kNoParent = 0xFFFFFFFFu;
constexpr std::size_t kRoundPerThread = 64;  // parents expanded per thread per round

std::uint64_t fingerprint(const ModelState& state) {
  thread_local std::string bytes;  // reused: encoding is on the hot path
  bytes.clear();
  state.encode(bytes);
  return XXH3_64bits(bytes.data(), bytes.size());
}

std::uint64_t peak_memory_bytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoull(line.substr(6)) * 1024u;
  }
  return 0;
}

struct Discovered {
  std::uint32_t parent = kNoParent;
  Statement via;
};

struct Successor {
  std::uint32_t parent = 0;
  Statement via;
  std::unique_ptr<ModelState> state;
  std::uint64_t fingerprint = 0;
  Verdict verdict;
};

struct Entry {
  std::uint32_t index = 0;
  std::unique_ptr<ModelState> state;
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
    auto root = std::make_unique<ModelState>(options_.semantics);
    seen_.insert(fingerprint(*root));
    tree_.push_back(Discovered{});
    std::vector<Entry> layer;
    layer.push_back(Entry{0, std::move(root)});
    std::uint64_t expansion_transitions = 0;  // executed to reach the layer being closed
    for (int depth = 0;; ++depth) {
      LayerStats stats;
      stats.depth = depth;
      stats.transitions = expansion_transitions;
      close_blocks(layer, depth, stats);
      stats.frontier = layer.size();
      stats.distinct = tree_.size();
      judge_program_ends(layer, depth);
      result_.depth_completed = depth;
      finish_layer(stats, start);
      if (depth == options_.depth || stopped_) break;
      LayerStats expansion;
      std::vector<Entry> next = expand(layer, depth, expansion);
      expansion_transitions = expansion.transitions;
      layer = std::move(next);
      if (stopped_) {
        result_.transitions += expansion_transitions;
        break;
      }
    }
    if (stopped_) result_.complete = false;
    result_.distinct = tree_.size();
    result_.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    result_.peak_memory_bytes = peak_memory_bytes();
    const double n = static_cast<double>(result_.distinct);
    result_.collision_probability = std::min(1.0, n * n / std::ldexp(1.0, 65));
    for (auto& [invariant, states] : violating_) result_.violating_states[invariant] = states.size();
    for (auto& [invariant, example] : first_) result_.counterexamples.push_back(example);
    return std::move(result_);
  }

 private:
  // Closing a block costs no depth: the layer is closed under it, in discovery order.
  void close_blocks(std::vector<Entry>& layer, int depth, LayerStats& stats) {
    for (std::size_t i = 0; i < layer.size(); ++i) {
      if (layer[i].state->open_blocks().empty()) continue;
      auto next = std::make_unique<ModelState>(*layer[i].state);
      const Verdict verdict = next->apply(close_statement());
      ++stats.transitions;
      const std::uint64_t fp = fingerprint(*next);
      record(verdict, layer[i].index, close_statement(), fp, depth);
      if (seen_.insert(fp).second) {
        tree_.push_back(Discovered{layer[i].index, close_statement()});
        layer.push_back(Entry{static_cast<std::uint32_t>(tree_.size() - 1), std::move(next)});
      }
    }
  }

  // A program may end wherever no block is open.
  void judge_program_ends(const std::vector<Entry>& layer, int depth) {
    for (const Entry& e : layer) {
      if (!e.state->open_blocks().empty()) continue;
      const Verdict verdict = e.state->end_here();
      if (verdict.violations.empty()) continue;
      const std::uint64_t fp = fingerprint(*e.state);
      record(verdict, e.index, std::nullopt, fp, depth);
    }
  }

  std::vector<Entry> expand(const std::vector<Entry>& layer, int depth, LayerStats& stats) {
    std::vector<Entry> next;
    const int threads = std::max(1, options_.threads);
    const std::size_t round = kRoundPerThread * static_cast<std::size_t>(threads);
    for (std::size_t begin = 0; begin < layer.size() && !stopped_; begin += round) {
      const std::size_t end = std::min(layer.size(), begin + round);
      std::vector<std::vector<Successor>> produced(end - begin);
      std::atomic<std::size_t> cursor{begin};
      auto work = [&] {
        std::vector<Statement> alphabet;
        for (std::size_t i = cursor++; i < end; i = cursor++) {
          next_statements(*layer[i].state, options_.alphabet, alphabet);
          std::vector<Successor>& out = produced[i - begin];
          out.reserve(alphabet.size());
          for (const Statement& s : alphabet) {
            Successor successor;
            successor.parent = layer[i].index;
            successor.via = s;
            successor.state = std::make_unique<ModelState>(*layer[i].state);
            successor.verdict = successor.state->apply(s);
            successor.fingerprint = fingerprint(*successor.state);
            out.push_back(std::move(successor));
          }
        }
      };
      std::vector<std::thread> pool;
      for (int t = 1; t < threads; ++t) pool.emplace_back(work);
      work();
      for (std::thread& t : pool) t.join();
      // Merge in discovery order: the same numbering whatever the thread count.
      for (std::vector<Successor>& list : produced) {
        for (Successor& s : list) {
          ++stats.transitions;
          record(s.verdict, s.parent, s.via, s.fingerprint, depth + 1);
          if (!seen_.insert(s.fingerprint).second) continue;
          tree_.push_back(Discovered{s.parent, s.via});
          next.push_back(Entry{static_cast<std::uint32_t>(tree_.size() - 1), std::move(s.state)});
          if (options_.max_states != 0 && tree_.size() >= options_.max_states) stopped_ = true;
        }
      }
    }
    return next;
  }

  // A transition (parent + statement) or a program end (parent, no statement) violated
  // something: count the state it leads to, and keep the first program as the counterexample.
  void record(const Verdict& verdict, std::uint32_t parent, std::optional<Statement> via, std::uint64_t target,
              int length) {
    for (spec::Invariant i : spec::kAllInvariants) {
      if (!verdict.violations.contains(i) || !checks_.contains(i)) continue;
      violating_[i].insert(target);
      if (first_.count(i) != 0) continue;
      Counterexample example;
      example.invariant = i;
      example.length = length;
      example.reason = verdict.reasons.at(i);
      example.program = program_of(path_to(parent, via), options_.alphabet);
      first_.emplace(i, std::move(example));
    }
  }

  // The statements from the root to `parent`, then `via`, then closes for the open blocks.
  std::vector<Statement> path_to(std::uint32_t parent, const std::optional<Statement>& via) const {
    std::vector<Statement> path;
    if (via) path.push_back(*via);
    for (std::uint32_t at = parent; at != 0; at = tree_[at].parent) path.push_back(tree_[at].via);
    std::reverse(path.begin(), path.end());
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
  spec::InvariantSet checks_;
  std::vector<Discovered> tree_;
  std::unordered_set<std::uint64_t> seen_;
  std::map<spec::Invariant, std::set<std::uint64_t>> violating_;
  std::map<spec::Invariant, Counterexample> first_;
  bool stopped_ = false;
  SearchResult result_;
};

}  // namespace

SearchResult search(const SearchOptions& options, const ProgressCallback& progress) {
  return Search(options, progress).run();
}

}  // namespace fp8sm::explorer
