// The first program, in discovery order, to violate each invariant and (with --coverage) to
// take each table row: the search's shortest counterexamples and row witnesses. A find is kept
// by where it was found (layer, discovery key, and whether a transition or a program end
// violated), not by when a rank came upon it, so every rank keeps its own earliest finds and
// the earliest of all ranks (reduce) is the one-process search's first.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "explorer/search/ranks.hpp"
#include "explorer/search/search_path.hpp"
#include "spec/invariants.hpp"

namespace fp8sm::explorer {

// What was judged: a transition (the statement that reached the state) or the end of the
// program at the state; a transition's verdict comes before the end's in discovery order.
enum class Judged : std::uint8_t { Transition = 0, End = 1 };

struct Find {
  bool found = false;
  std::uint8_t length = 0;  // statements of the program, its layer
  std::uint64_t key = 0;    // discovery key in that layer
  Judged judged = Judged::Transition;
  SearchPath path;          // the state's: the program is it with its open blocks closed

  // Whether this find comes before `other` in discovery order.
  bool before(const Find& other) const;
};

class FirstFinds {
 public:
  explicit FirstFinds(std::size_t rows = 0) : rows_(rows) {}

  void offer_violation(spec::Invariant i, const Find& find) { offer(violations_[static_cast<std::size_t>(i)], find); }
  void offer_row(std::size_t row, const Find& find) { offer(rows_[row], find); }
  const Find& violation(spec::Invariant i) const { return violations_[static_cast<std::size_t>(i)]; }
  const Find& row(std::size_t row) const { return rows_[row]; }
  std::size_t rows() const { return rows_.size(); }

  // The bytes of every find, and back (snapshots, and the reduction between ranks).
  Bytes serialize() const;
  // Keeps the earlier of each find here and in `bytes`; throws std::runtime_error on bytes that
  // are not finds of as many rows.
  void merge(const Bytes& bytes);
  // Every rank's finds merged, on every rank.
  void reduce(Ranks& ranks);

 private:
  static void offer(Find& kept, const Find& find) {
    if (!kept.found || find.before(kept)) kept = find;
  }
  std::array<Find, spec::kAllInvariants.size()> violations_;
  std::vector<Find> rows_;
};

}  // namespace fp8sm::explorer
