// The canonical form of a search state, and its bytes.
//
// Ids the model invents as it runs (checkpoint captures, autograd nodes, graph generations,
// and the positions of the driver's records and frames) say nothing but order and equality:
// fresh ids are larger than every id in use, and next-id counters are ids too. So after every
// statement the search renames each kind of id to its rank among the ids the state mentions
// (canonicalize), and drops the entries of tables keyed by an id nothing mentions any more
// (a released checkpoint's capture record, stash, flags), since nothing can ever read them.
// Two states that differ only in how many ids were handed out before, or in such dead
// entries, become one state; and the ids stay small, so the flat state's fixed capacities
// hold them.
//
// What mentions an id: the machine's stacks and FIFO, the open blocks, the nodes of every
// graph, the counters, the observers' records carried; and, for captures, the driver's
// records and frames that are themselves mentioned (by a node or a block). Tables keyed by a
// capture (capture records, fp8sm's stashes, released flags, what an original forward saw,
// kept and dropped stashes) mention nothing.
//
// The canonical bytes (write_canonical) are everything the run's future depends on, and
// nothing else: not the statement log (only the bodies that replay it), not where a body
// lies in the log, not what is derivable from the rest (the saved-tensor hooks from the open
// blocks). Equal bytes mean equal futures.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "explorer/model/abstractions.hpp"
#include "explorer/model/invariant_checker.hpp"
#include "explorer/model/model_state.hpp"

namespace fp8sm::explorer {

// Renames the run's ids by rank and drops dead entries. `carried`: the observers whose records
// the state carries (their ids count as mentions, and are renamed).
void canonicalize(RunState& run, const CheckedObservers& carried);

// What a run was before a statement, for keeps_canonical_ids.
struct IdsBefore {
  bool skipping = false;
  std::size_t stash_entries = 0;
  std::size_t records = 0;
  spec::Op closing = spec::Op::Step;  // the innermost open block (Step: none)
  FlatStorage::Id closing_frame = statemachine::kNone<FlatStorage>;
  FlatStorage::Id closing_generation = statemachine::kNone<FlatStorage>;
  // A checkpoint's context is the innermost (upstream may leak a recompute's above it).
  bool closing_context_on_top = false;
};
IdsBefore ids_before(const RunState& run, spec::Op op);  // before statement `op`
// Whether the statement `op` cannot have left a canonical run's ids other than their ranks,
// nor a dead entry: then the search skips canonicalize (test_flat_state.cpp checks every case
// it skips at depth 4).
bool keeps_canonical_ids(spec::Op op, const IdsBefore& before, const RunState& after);

// Where canonical bytes are written next. Write functions take it and give it back by value,
// so that its pointer stays in a register: the bytes are chars, and a char stored through a
// pointer kept in memory could be that pointer itself, which the compiler would reload after
// every byte (the fingerprint is on the search's hot path).
struct Out {
  char* at;
  void u8(std::uint64_t v) { *at++ = static_cast<char>(v); }
  void u32(std::uint32_t v) { fixed<sizeof v>(&v); }
  void u64(std::uint64_t v) { fixed<sizeof v>(&v); }
  // N bytes, N known: a few moves.
  template <std::size_t N>
  void fixed(const void* data) {
    std::memcpy(at, data, N);
    at += N;
  }
  // The first n of an array of N bytes (N known, n <= N), in 16-byte moves that stay inside
  // the array (the last may overlap the one before); the cursor keeps n, what follows
  // overwrites the rest.
  template <std::size_t N>
  void used_of(const void* data, std::size_t n) {
    const char* from = static_cast<const char*>(data);
    if constexpr (N <= 16) {
      std::memcpy(at, from, N);
    } else {
      std::size_t i = 0;
      for (; i + 16 <= n; i += 16) std::memcpy(at + i, from + i, 16);
      if (i < n) {
        const std::size_t last = n >= 16 ? n - 16 : 0;
        std::memcpy(at + last, from + last, 16);
      }
    }
    at += n;
  }
  // n bytes, mostly a few: a loop (the compiler makes a memcpy of unknown size an inline
  // `rep movs`, tens of cycles to start).
  void raw(const void* data, std::size_t n) {
    const char* from = static_cast<const char*>(data);
    for (std::size_t i = 0; i < n; ++i) at[i] = from[i];
    at += n;
  }
};

// The buffer of one thread's canonical bytes, with room for a whole state made once.
class ByteWriter {
 public:
  // At most this many bytes describe one state (each list, however full, at most its array
  // and a few more, each body at most the log: less than four times the state); a list's
  // array's first 16 bytes may be written past them (Out::used_of).
  static constexpr std::size_t kStateBound = 4 * sizeof(ModelState);

  void clear() {
    if (bytes_.size() < kStateBound + sizeof(ModelState)) bytes_.resize(kStateBound + sizeof(ModelState));
    size_ = 0;
  }
  Out out() { return Out{bytes_.data() + size_}; }
  void advance(const Out& out) { size_ = static_cast<std::size_t>(out.at - bytes_.data()); }
  const char* data() const { return bytes_.data(); }
  std::size_t size() const { return size_; }

 private:
  std::vector<char> bytes_;
  std::size_t size_ = 0;
};

// Where each part of a run's canonical bytes starts, by name (bench/state_growth: which parts
// still take new values as programs grow). Not on the search's path: there it is null.
class PartMarks {
 public:
  explicit PartMarks(const char* base) : base_(base) {}
  void at(const char* name, const Out& out) { starts_.emplace_back(name, static_cast<std::size_t>(out.at - base_)); }
  const std::vector<std::pair<const char*, std::size_t>>& starts() const { return starts_; }
  // The names of `like`, each an empty part at `out` (a run a state leaves out).
  void empty_parts_like(const PartMarks& like, const Out& out) {
    for (const auto& start : like.starts()) at(start.first, out);
  }

 private:
  const char* base_;
  std::vector<std::pair<const char*, std::size_t>> starts_;
};

// What of a run's step results (its counts and escaped exceptions in the step so far) a
// state holds: I8 alone reads them, at the step's end, against the other run's.
struct StepResultsWritten {
  bool checked = false;  // I8 is checked: the part is named (PartMarks), even when left out
  bool written = false;  // I8 still judges this state's future
  // Subtracted from the counts: what both runs counted so far (Abstractions::relative_step_counts).
  std::uint32_t forward_both = 0;
  std::uint32_t backward_both = 0;
  bool saturated = false;  // each count at most 1 (Abstractions::unsound_saturate_step_counts)
};

// Appends the run's canonical bytes: the model, the observers of `carried`, and (for I8) the
// step's counts and escaped exceptions. `canonical_ids`: the run was canonicalized. `marks`
// (may be null) learns where each part starts.
void write_canonical(const RunState& run, const CheckedObservers& carried, bool canonical_ids,
                     const StepResultsWritten& step_results, const Abstractions& abstractions, ByteWriter& out,
                     PartMarks* marks = nullptr);
// Appends the program facts the future depends on: with `judged` (I8 still judges), the
// reference's divergence; with `with_reference` but not `judged`, only that it no longer judges.
void write_canonical(const ProgramFacts& facts, bool with_reference, bool judged, ByteWriter& out);

}  // namespace fp8sm::explorer
