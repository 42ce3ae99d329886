// One state of the exhaustive search, as a flat value: a program prefix executed on the model
// (the interpreter's state: machine, tape, checkpoint ledger, blocks, step), what the
// observers of the invariants checked carry, the same for the prefix without its checkpoints
// (the reference of I8, only when I8 is checked), and what the static rules of the language
// need to know (open blocks, tapes saved, modules used).
//
// A ModelState is trivially copyable: a successor is a copy of its parent (of the parts the
// search carries), a statement's few table events, a renaming of its ids by rank
// (canonical_state.hpp) and a hash of its canonical bytes. It owns no memory and a successor
// allocates none. The behaviour lives in a ModelRunner, one per thread, which binds the
// interpreters and observers to whichever state it works on.
//
// A state carries what the invariants checked need and nothing else (carried_state): checking
// I1 alone compares states on the model's own state and I1's observer, so states that differ
// only in what I1 never reads are one.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "explorer/model/abstractions.hpp"
#include "explorer/model/fingerprint.hpp"
#include "explorer/model/invariant_checker.hpp"
#include "explorer/model/verdict.hpp"
#include "interpreter/interpreter.hpp"
#include "spec/invariants.hpp"
#include "spec/scenario.hpp"
#include "spec/semantics.hpp"

namespace fp8sm::explorer {

using statemachine::FlatStorage;

class ByteWriter;  // canonical_state.hpp
class PartMarks;

// One run of the program (or of its reference): the model and the observers' parts.
struct RunState {
  interpreter::InterpreterState<FlatStorage> model;
  ObserverState<FlatStorage> observers;
};

namespace capacity {
FP8SM_CAPACITY(OpenBlocks, 24, "open blocks");
}  // namespace capacity

// What the search knows of the program text beside its runs.
struct ProgramFacts {
  statemachine::BoundedVector<spec::Op, capacity::OpenBlocks::kCapacity, capacity::OpenBlocks> open;
  bool tape_saved[driver::capacity::Tapes::kCapacity] = {};  // some `save` of it in the prefix
  bool tape_freed[driver::capacity::Tapes::kCapacity] = {};  // backpropagated without retain since its last save
  std::uint8_t modules_used = 0;  // module names are used in order L0, L1, ... (first use)
  std::uint8_t checkpoints_open = 0;  // checkpoint blocks among `open`
  bool diverged = false;              // from the reference (spec::ReferenceDivergence): I8 no longer applies
  bool reference_comparable = true;   // the runs have not parted on exceptions

  bool inside_checkpoint() const { return checkpoints_open > 0; }
  // Whether I8 has judged its last step: both flags above stay once set.
  bool transparency_settled() const { return diverged || !reference_comparable; }
};

struct ModelState {
  ProgramFacts facts;
  RunState program;
  RunState reference;  // meaningful only when I8 is checked
};
static_assert(std::is_trivially_copyable_v<ModelState>, "a successor is a copy of its parent's bytes");

// What a state carries when the search checks `checks` (empty: all), in words, for the report.
std::vector<std::string> carried_state(const spec::InvariantSet& checks);

class ModelRunner {
 public:
  // `checks`: the invariants the search checks (empty: all). Verdicts of the others are not
  // computed (their observers do not run) and must be ignored.
  // `abstractions`: which states are one beyond the canonical ids (abstractions.hpp).
  ModelRunner(spec::Semantics semantics, const spec::InvariantSet& checks, bool canonical_ids,
              const Abstractions& abstractions = {});
  ModelRunner(const ModelRunner&) = delete;
  ModelRunner& operator=(const ModelRunner&) = delete;

  // The empty program.
  void initial(ModelState& state) const;
  // Copies what the search carries of `from` (the parts of unchecked invariants are left).
  void copy(ModelState& to, const ModelState& from) const;

  // Executes one statement on both runs (the caller keeps to the language's static rules:
  // see Alphabet) and renames the ids by rank. Returns what it violated (valid until the
  // runner's next call).
  const Verdict& apply(ModelState& state, const spec::Statement& statement);
  // What ending the program here (end of file) would violate. Leaves `state` ended: for a
  // state the caller is done with (copy first otherwise).
  const Verdict& end_here(ModelState& state);

  // A 64-bit hash of the canonical bytes; equal bytes mean equal futures.
  Fingerprint fingerprint(const ModelState& state) const;
  // The canonical bytes themselves (tests).
  std::string canonical_bytes(const ModelState& state) const;
  // The same bytes cut into parts, in the order of part_names(), and their fingerprint (that of
  // fingerprint(state)) from the one writing: the growth analysis (state_growth.hpp) counts the
  // values each part takes and stores the states by fingerprint.
  struct Parts {
    Fingerprint fingerprint;
    std::vector<std::string> parts;
  };
  Parts canonical_parts(const ModelState& state) const;
  // The parts' names ("facts", "program.machine.fifo", ..., "reference...."): the same for every
  // state of this runner (`state`: any of them).
  std::vector<std::string> part_names(const ModelState& state) const;

  // From now on, appends the table row of every transition the program's machine takes to
  // `rows` (nullptr stops): the search's --coverage. The reference's machine is not recorded.
  void record_rows(std::vector<std::uint16_t>* rows) { program_.machine().record_rows(rows); }

  bool with_reference() const { return with_reference_; }
  const CheckedObservers& carried() const { return carried_; }

 private:
  void finish_step(ModelState& state, std::uint32_t program_step, std::uint32_t reference_step);
  // Whether I8 can still judge `state`'s future, so that the state holds the run without
  // checkpoints and the step's results (Abstractions::settled_transparency).
  bool judges_transparency(const ModelState& state) const;
  // Whether the run without checkpoints still follows the program: not once I8 has settled
  // (the facts say so) and the state leaves it out.
  bool runs_reference(const ModelState& state) const {
    return with_reference_ && !(abstractions_.settled_transparency && state.facts.transparency_settled());
  }
  // Whether each step's start renames the numerics' values (Abstractions::numerics_from_step_start).
  bool renames_numerics() const { return carried_.numerics && abstractions_.numerics_from_step_start; }
  // Writes `state`'s canonical bytes into `bytes` (cleared first): the facts, the program's run,
  // the reference's when I8 is checked. The marks (may be null) learn where each run's parts
  // start; `facts_end` and `program_end` (may be null) where the facts and the program's run end.
  void write_state(const ModelState& state, ByteWriter& bytes, PartMarks* program_marks = nullptr,
                   PartMarks* reference_marks = nullptr, std::size_t* facts_end = nullptr,
                   std::size_t* program_end = nullptr) const;
  // canonical_parts, with the parts' names in `names` (may be null).
  Parts cut_into_parts(const ModelState& state, std::vector<std::string>* names) const;
  void bind(ModelState& state);
  void copy_run(RunState& to, const RunState& from) const;

  spec::Semantics semantics_;
  CheckedObservers carried_;
  bool with_reference_;
  bool canonical_ids_;
  Abstractions abstractions_;
  ModelState scratch_;  // what the engines are bound to before the first state
  const ModelState* bound_ = nullptr;  // the state the engines work on
  Verdict verdict_;     // the program's, per statement
  Verdict ignored_;     // the reference's own (only I8's comparison counts)
  interpreter::FlatInterpreter program_;
  InvariantChecker<FlatStorage> program_checker_;
  interpreter::FlatInterpreter reference_;
  InvariantChecker<FlatStorage> reference_checker_;
};

}  // namespace fp8sm::explorer
