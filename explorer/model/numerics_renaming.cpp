#include "explorer/model/numerics_renaming.hpp"

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "explorer/model/transparency.hpp"

namespace fp8sm::explorer {

namespace {

using Numerics = NumericsState<FlatStorage>;

// Every meta the numerics hold and every history checkpoints' original forwards saw, in a fixed
// order: the modules' forward metas and the copies kept for a restore, the stash's, those a
// recompute kept from before its first pop, the kept stashes', the histories seen, and last the
// modules' backward metas. (Last, so that where nothing reads them,
// Abstractions::unread_backward_metas, their values do not shift the names of the others.)
template <class OnMeta, class OnSeen>
void visit(Numerics& n, OnMeta&& on_meta, OnSeen&& on_seen) {
  for (auto& module : n.modules) {
    on_meta(module.forward);
    on_meta(module.saved_for_restore);
  }
  for (auto& entry : n.stash) on_meta(entry.value);
  for (auto& before : n.before_pop) on_meta(before.meta);
  for (auto& kept : n.kept) on_meta(kept.meta);
  for (auto& seen : n.seen) on_seen(seen.history);
  for (auto& module : n.modules) on_meta(module.backward);
}

template <class F>
void for_each_meta(Numerics& n, F&& f) {
  visit(n, f, [](std::uint64_t&) {});
}

// Every value held: each meta's history, then its row 0; each history seen.
template <class F>
void for_each_value(Numerics& n, F&& f) {
  visit(
      n,
      [&](SymbolicMeta& meta) {
        f(meta.history);
        f(meta.current);
      },
      f);
}

// The constant the k-th value held becomes: spread over 64 bits as the values were, so that
// ORing a later tag into one tells them apart as before.
std::uint64_t renamed_constant(std::size_t k) { return mix64(0x5EED5EED00000000ull + k); }

// The held values in order of first occurrence, with their new names.
class Renaming {
 public:
  void hold(std::uint64_t value) {
    if (value != 0 && index_of(value) == kAbsent) values_.push_back(value);
  }
  void hold_fold(std::uint64_t history, std::uint64_t current) {
    if (current != 0) folds_.emplace_back(history, current);
  }
  // Names every held value: a held fold of a held meta becomes the fold of that meta's new
  // names (in the order of their arguments: a fold may fold another's result), any other
  // value its constant.
  void name() {
    names_.assign(values_.size(), 0);
    // Each value's arguments as a fold (kAbsent: zero, which a module's first history is).
    std::vector<std::pair<std::size_t, std::size_t>> made_of(values_.size(), {kAbsent, kAbsent});
    std::vector<bool> is_fold(values_.size(), false);
    for (const auto& [history, current] : folds_) {
      const std::size_t at = index_of(SymbolicMeta::folded(history, current));
      if (at == kAbsent || is_fold[at]) continue;
      made_of[at] = {index_of(history), index_of(current)};
      is_fold[at] = true;
    }
    std::vector<bool> named(values_.size(), false);
    for (std::size_t k = 0; k < values_.size(); ++k) {
      if (is_fold[k]) continue;
      names_[k] = renamed_constant(k);
      named[k] = true;
    }
    auto name_of = [&](std::size_t k) { return k == kAbsent ? std::uint64_t{0} : names_[k]; };
    auto ready = [&](std::size_t k) { return k == kAbsent || named[k]; };
    for (bool progress = true; progress;) {
      progress = false;
      for (std::size_t k = 0; k < values_.size(); ++k) {
        if (named[k] || !ready(made_of[k].first) || !ready(made_of[k].second)) continue;
        names_[k] = SymbolicMeta::folded(name_of(made_of[k].first), name_of(made_of[k].second));
        named[k] = progress = true;
      }
    }
    // A fold whose arguments never got named (a cycle, which only colliding fingerprints could
    // make) is a constant like any other.
    for (std::size_t k = 0; k < values_.size(); ++k) {
      if (!named[k]) names_[k] = renamed_constant(k);
    }
  }
  std::uint64_t renamed(std::uint64_t value) const { return value == 0 ? 0 : names_[index_of(value)]; }

 private:
  static constexpr std::size_t kAbsent = ~std::size_t{0};
  // A state holds a few dozen values at most: a linear search beats a hash map here.
  std::size_t index_of(std::uint64_t value) const {
    if (value == 0) return kAbsent;
    const auto at = std::find(values_.begin(), values_.end(), value);
    return at == values_.end() ? kAbsent : static_cast<std::size_t>(at - values_.begin());
  }
  std::vector<std::uint64_t> values_;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> folds_;
  std::vector<std::uint64_t> names_;
};

// Every step number held is an earlier step's: 0, below the kRebasedStep of the steps to come
// (`held_as`: only the unsound test's kRebasedStep).
void rebase_steps(RunState& run, std::int32_t held_as) {
  Numerics& n = run.observers.numerics;
  for_each_meta(n, [&](SymbolicMeta& meta) {
    if (meta.current_oldest_step >= 0) meta.current_oldest_step = held_as;
  });
  for (auto& entry : n.stash) entry.step = held_as;
  n.step = 0;
  run.model.step = kRebasedStep;
}

}  // namespace

void rename_numerics_at_step_start(RunState& program, RunState* reference, bool held_steps_earlier) {
  Renaming renaming;
  auto hold = [&](RunState& run) {
    visit(
        run.observers.numerics,
        [&](SymbolicMeta& meta) {
          renaming.hold(meta.history);
          renaming.hold(meta.current);
          renaming.hold_fold(meta.history, meta.current);
        },
        [&](std::uint64_t& seen) { renaming.hold(seen); });
  };
  hold(program);
  if (reference != nullptr) hold(*reference);
  renaming.name();
  auto rename = [&](RunState& run) {
    for_each_value(run.observers.numerics, [&](std::uint64_t& value) { value = renaming.renamed(value); });
    rebase_steps(run, held_steps_earlier ? 0 : static_cast<std::int32_t>(kRebasedStep));
  };
  rename(program);
  if (reference != nullptr) rename(*reference);
}

namespace {

// Whether the numerics hold a copy of a forward meta: a stash entry, a kept stash, a meta from
// before a recompute's pop, a meta saved for a restore.
bool holds_copies(const Numerics& n) {
  return !n.stash.empty() || !n.before_pop.empty() || !n.kept.empty() ||
         std::any_of(n.modules.begin(), n.modules.end(),
                     [](const Numerics::Module& module) { return module.saved_for_restore != SymbolicMeta{}; });
}

// The current step's one tag of module m's meta in `direction`, made from the meta's own history.
std::uint64_t own_tag(const Numerics& n, std::size_t m, const SymbolicMeta& meta, bool backward) {
  return amax_tag(static_cast<unsigned>(m), n.step, meta.history, backward);
}

// Whether each row 0 of `direction` is empty or the current step's one tag of its own history.
bool rows_are_own_tags(const Numerics& n, bool backward) {
  for (std::size_t m = 0; m < n.modules.size(); ++m) {
    const SymbolicMeta& meta = backward ? n.modules[m].backward : n.modules[m].forward;
    if (meta.current != 0 && meta.current != own_tag(n, m, meta, backward)) return false;
  }
  return true;
}

// Renames the histories of `direction` and, for the forward, the histories seen; each row 0
// becomes its tag of the renamed history.
void rename_histories(Numerics& n, const Renaming& renaming, bool backward) {
  for (std::size_t m = 0; m < n.modules.size(); ++m) {
    SymbolicMeta& meta = backward ? n.modules[m].backward : n.modules[m].forward;
    meta.history = renaming.renamed(meta.history);
    if (meta.current != 0) meta.current = own_tag(n, m, meta, backward);
  }
  if (backward) return;
  for (auto& seen : n.seen) seen.history = renaming.renamed(seen.history);
}

}  // namespace

bool rename_numerics_within_step(RunState& run, bool only_without_copies) {
  Numerics& n = run.observers.numerics;
  if (holds_copies(n) && only_without_copies) return false;
  if (!rows_are_own_tags(n, false)) return false;
  Renaming renaming;
  for (const auto& module : n.modules) renaming.hold(module.forward.history);
  for (const auto& seen : n.seen) renaming.hold(seen.history);
  renaming.name();
  rename_histories(n, renaming, false);
  return true;
}

bool rename_numerics_within_step_together(RunState& program, RunState& reference, bool together) {
  Numerics& mine = program.observers.numerics;
  Numerics& theirs = reference.observers.numerics;
  if (holds_copies(mine) || holds_copies(theirs)) return false;
  if (together && !same_numerics(mine.modules, theirs.modules)) return false;
  for (const Numerics* n : {&mine, &theirs}) {
    if (!rows_are_own_tags(*n, false) || !rows_are_own_tags(*n, true)) return false;
  }
  // One renaming of both runs' values (the unsound test's: of the program's alone).
  auto rename = [](std::initializer_list<Numerics*> runs) {
    Renaming renaming;
    for (const Numerics* n : runs) {
      for (const auto& module : n->modules) renaming.hold(module.forward.history);
      for (const auto& seen : n->seen) renaming.hold(seen.history);
    }
    for (const Numerics* n : runs) {
      for (const auto& module : n->modules) renaming.hold(module.backward.history);
    }
    renaming.name();
    for (Numerics* n : runs) {
      rename_histories(*n, renaming, false);
      rename_histories(*n, renaming, true);
    }
  };
  if (together) {
    rename({&mine, &theirs});
  } else {
    rename({&mine});
  }
  return true;
}

}  // namespace fp8sm::explorer
