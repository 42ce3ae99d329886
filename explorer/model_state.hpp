// One state of the exhaustive search: a program prefix executed on the model, together with
// the same prefix without its checkpoints (the reference of I8, carried only when I8 is
// checked), and what the static rules of the language need to know (open blocks, tapes saved).
//
// A state carries what the invariants checked need and nothing else (carried_state): checking
// I1 alone compares states on the model's own state, so states that differ only in what I1
// never reads are one.
//
// A state is only ever observed between two statements. Copying one copies both runs (and
// rebinds their observers), so a prefix is executed once and each extension costs one
// statement.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "explorer/invariant_checker.hpp"
#include "spec/scenario.hpp"
#include "spec/scenario_transform.hpp"
#include "spec/semantics.hpp"
#include "interpreter/interpreter.hpp"

namespace fp8sm::explorer {

// The violations one transition caused, with a reason for each.
struct Verdict {
  spec::InvariantSet violations;
  std::map<spec::Invariant, std::string> reasons;
  void merge(const StepVerdict& step);
  void add(spec::Invariant invariant, const std::string& reason);
};

class ModelState {
 public:
  // `checks`: the invariants the search checks (empty: all). Verdicts of the others are not
  // computed soundly (what they read may not be carried) and must be ignored.
  explicit ModelState(spec::Semantics semantics, const spec::InvariantSet& checks = {});
  ModelState(const ModelState& other);
  // The same copy into this state's own storage, which allocates nothing once that storage is
  // large enough: the search recycles one state per worker for every successor it tries.
  ModelState& operator=(const ModelState& other);

  // Executes one statement on both runs; the caller keeps to the language's static rules
  // (see Alphabet). Returns what it violated.
  Verdict apply(const spec::Statement& statement);
  // What ending the program here (end of file) would violate; the state is unchanged.
  Verdict end_here() const;
  // The same verdict, computed on this state itself, which is left ended: for a caller that
  // is done with the state, it saves the copy (a third of a successor's cost).
  Verdict end_here_and_discard() { return finish_step(true); }

  // Static facts for the alphabet.
  const std::vector<spec::Op>& open_blocks() const { return open_; }
  bool inside_checkpoint() const;
  bool tape_saved(std::uint16_t tape) const { return tape < saved_.size() && saved_[tape]; }
  int modules_used() const { return modules_used_; }

  // Everything the future depends on, packed: equal encodings mean equal futures. With
  // canonical ids, each run's ids are renamed by rank and entries of ids nothing refers to
  // are left out (statemachine::Encoder), which keeps that promise and merges more states.
  std::string encode(bool canonical_ids = true) const;
  void encode(std::string& out, bool canonical_ids = true) const;  // appends

 private:
  struct Run {
    std::unique_ptr<InvariantChecker> checker;
    std::unique_ptr<interpreter::Interpreter> interpreter;
  };
  static Run fresh_run(spec::Semantics semantics);
  static Run copy_run(const Run& run);
  static void assign_run(Run& to, const Run& from);
  Verdict finish_step(bool end_of_file);

  InvariantChecker::Carried carried_;
  bool with_reference_ = true;  // I8 is checked
  Run program_;
  Run reference_;  // empty unless with_reference_
  spec::ReferenceDivergence divergence_;  // once diverged, I8 no longer applies
  bool reference_comparable_ = true;
  std::vector<spec::Op> open_;  // opening statements of the open blocks; the reference skips checkpoints
  std::vector<bool> saved_;  // per tape: some `save` of it appears in the prefix
  int modules_used_ = 0;     // module names are used in order L0, L1, ... (first use)
};

// What a state carries when the search checks `checks` (empty: all), in words, for the report.
std::vector<std::string> carried_state(const spec::InvariantSet& checks);

}  // namespace fp8sm::explorer
