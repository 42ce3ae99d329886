#include "explorer/model/state_growth.hpp"

#include <fmt/format.h>
#include <xxhash.h>

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <unordered_set>
#include <utility>

#include "explorer/model/alphabet.hpp"
#include "explorer/model/model_state.hpp"
#include "explorer/model/resource_bounds.hpp"
#include "spec/scenario_parser.hpp"
#include "statemachine/storage.hpp"

namespace fp8sm::explorer {

using spec::Statement;

std::vector<std::string> StateGrowth::still_growing() const {
  std::vector<std::string> parts;
  if (fixpoint || states.empty()) return parts;
  for (const auto& [name, counts] : part_values) {
    const std::size_t last = counts.back();
    const std::size_t before = counts.size() >= 2 ? counts[counts.size() - 2] : 0;
    if (last > before) parts.push_back(name);
  }
  return parts;
}

namespace {

std::string hex_of(const std::string& bytes) {
  std::string hex;
  for (unsigned char c : bytes) hex += fmt::format("{:02x}", c);
  return hex;
}

// The analysis' state between layers: the runner and its scratch states, the fingerprints
// stored and each part's values.
class GrowthWalk {
 public:
  GrowthWalk(const ModelSettings& settings, const StateGrowthOptions& options)
      : settings_(settings),
        options_(options),
        runner_(settings.semantics, settings.checks, settings.canonical_ids, settings.abstractions),
        root_(std::make_unique<ModelState>()),
        parent_(std::make_unique<ModelState>()),
        child_(std::make_unique<ModelState>()) {
    runner_.initial(*root_);
    names_ = runner_.part_names(*root_);
    values_.resize(names_.size());
    const ModelRunner::Parts root = runner_.canonical_parts(*root_);
    seen_.insert(root.fingerprint);
    for (std::size_t i = 0; i < root.parts.size(); ++i) {
      values_[i].insert(XXH3_64bits(root.parts[i].data(), root.parts[i].size()));
    }
    for (const std::string& name : options_.forget_together) {
      const auto at = std::find(names_.begin(), names_.end(), name);
      if (at == names_.end()) throw std::invalid_argument(fmt::format("no part of the state is named '{}'", name));
      forgotten_together_.push_back(static_cast<std::size_t>(at - names_.begin()));
    }
    if (forgets()) keep_without(root.parts.begin());
  }

  StateGrowth run() {
    std::vector<std::vector<Statement>> frontier = {{}};
    for (int layer = 1; layer <= options_.depth && !frontier.empty(); ++layer) {
      examples_.clear();
      frontier = expand(frontier);
      growth_.states.push_back(seen_.size());
      for (std::size_t i = 0; i < names_.size(); ++i) growth_.part_values[names_[i]].push_back(values_[i].size());
      if (forgets()) count_without();
      if (options_.max_states != 0 && seen_.size() > options_.max_states) break;
    }
    growth_.fixpoint = frontier.empty();
    // The last layer's examples, of the parts it gave new values (a part it gave none has none).
    for (const std::string& part : growth_.still_growing()) growth_.examples[part] = std::move(examples_[part]);
    return std::move(growth_);
  }

 private:
  // The layer after `frontier`: each parent's statements, each with the closes after it.
  std::vector<std::vector<Statement>> expand(const std::vector<std::vector<Statement>>& frontier) {
    std::vector<std::vector<Statement>> added;
    std::vector<Statement> next;
    for (const std::vector<Statement>& path : frontier) {
      runner_.copy(*parent_, *root_);
      for (const Statement& s : path) runner_.apply(*parent_, s);
      next_statements(parent_->facts, settings_.alphabet, next);
      for (const Statement& first : next) {
        runner_.copy(*child_, *parent_);
        std::vector<Statement> at = path;
        std::vector<std::pair<std::vector<Statement>, Fingerprint>> links;
        pending_.clear();
        bool within = true;
        for (Statement via = first;;) {
          at.push_back(via);
          try {
            runner_.apply(*child_, via);
          } catch (const statemachine::CapacityError& e) {
            throw statemachine::CapacityError(
                fmt::format("{} after {}", e.what(), spec::print_scenario_one_line(program_of(at, settings_.alphabet))));
          }
          if (!within_bounds(*child_, settings_.alphabet.bounds)) {
            within = false;
            break;
          }
          links.emplace_back(at, count_parts(*child_));
          if (child_->facts.open.empty()) break;
          via = close_statement();
        }
        if (!within) continue;  // the engine stores none of its states
        // The chain's whole program (its blocks closed) is the example of a value its states showed.
        for (std::size_t i = 0; i < pending_.size(); ++i) {
          const std::string& bytes = pending_[i];
          const std::size_t part = i % names_.size();
          if (!values_[part].insert(XXH3_64bits(bytes.data(), bytes.size())).second) continue;
          std::vector<StateGrowth::Example>& kept = examples_[names_[part]];
          if (static_cast<int>(kept.size()) < options_.examples_per_part) {
            kept.push_back({spec::print_scenario_one_line(program_of(at, settings_.alphabet)), hex_of(bytes)});
          }
        }
        for (std::size_t k = 0; k < links.size(); ++k) {
          auto& [chain, fingerprint] = links[k];
          if (!seen_.insert(fingerprint).second) continue;
          added.push_back(std::move(chain));
          if (forgets()) keep_without(pending_.begin() + static_cast<std::ptrdiff_t>(k * names_.size()));
        }
      }
    }
    return added;
  }

  // Keeps `state`'s parts until its chain ends: they count only if the chain stays within the
  // bounds, as its states are stored only then. Returns its fingerprint.
  Fingerprint count_parts(const ModelState& state) {
    ModelRunner::Parts written = runner_.canonical_parts(state);
    for (std::string& part : written.parts) pending_.push_back(std::move(part));
    return written.fingerprint;
  }

  bool forgets() const { return options_.forgetting || !forgotten_together_.empty(); }

  // A newly stored state, its parts from `parts` on: per part, the hash of all its other parts;
  // and the hash of the parts outside forget_together.
  void keep_without(std::vector<std::string>::const_iterator parts) {
    const std::size_t n = names_.size();
    std::vector<std::uint64_t> hashes(n);
    for (std::size_t i = 0; i < n; ++i, ++parts) hashes[i] = XXH3_64bits(parts->data(), parts->size());
    if (options_.forgetting) {
      without_.resize(n);
      for (std::size_t i = 0; i < n; ++i) {
        const std::uint64_t kept = hashes[i];
        hashes[i] = 0;
        without_[i].push_back(XXH3_64bits(hashes.data(), n * sizeof(std::uint64_t)));
        hashes[i] = kept;
      }
    }
    if (!forgotten_together_.empty()) {
      for (std::size_t i : forgotten_together_) hashes[i] = 0;
      without_together_.push_back(XXH3_64bits(hashes.data(), n * sizeof(std::uint64_t)));
    }
  }
  // Sorts and de-duplicates each list and records its size for the layer.
  void count_without() {
    auto distinct = [](std::vector<std::uint64_t>& list) {
      std::sort(list.begin(), list.end());
      list.erase(std::unique(list.begin(), list.end()), list.end());
      return list.size();
    };
    for (std::size_t i = 0; i < without_.size(); ++i) growth_.distinct_without[names_[i]].push_back(distinct(without_[i]));
    if (!forgotten_together_.empty()) growth_.distinct_without_together.push_back(distinct(without_together_));
  }

  const ModelSettings& settings_;
  const StateGrowthOptions& options_;
  ModelRunner runner_;
  std::unique_ptr<ModelState> root_, parent_, child_;
  std::unordered_set<Fingerprint, FingerprintHash> seen_;
  std::vector<std::string> names_;                                     // the parts', in the runner's order
  std::vector<std::unordered_set<std::uint64_t>> values_;              // per part, its values' hashes
  std::map<std::string, std::vector<StateGrowth::Example>> examples_;  // of the layer being added
  std::vector<std::string> pending_;  // the parts of the chain's states, state after state
  std::vector<std::vector<std::uint64_t>> without_;  // per part, the stored states' hashes without it
  std::vector<std::size_t> forgotten_together_;      // forget_together's parts, as positions in names_
  std::vector<std::uint64_t> without_together_;      // the stored states' hashes without all of them
  StateGrowth growth_;
};

}  // namespace

StateGrowth measure_state_growth(const ModelSettings& settings, const StateGrowthOptions& options) {
  if (!settings.alphabet.bounds.any()) {
    throw std::invalid_argument("the growth of a search without resource bounds: nothing bounds it");
  }
  return GrowthWalk(settings, options).run();
}

}  // namespace fp8sm::explorer
