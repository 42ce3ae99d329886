// One scenario run as a sequence of messages and notes between the parts of the model, the
// drawing that `explorer run --mermaid` and `--dot` print (mermaid.hpp, sequence_dot.hpp).
//
// The messages are the table events the interpreter fires, in order, from the program to the
// part that handles them, each with the rows it took (its numbers in `explorer table`). The
// notes say what else happened: each statement as the program reaches it, the forward and
// backward updates (one note per reduce_and_update_fp8_tensors call), a module joining the
// update registry, a claim's owner, the exceptions raised and escaping, and at each step's end
// its counts and the invariants it violates (with the checker's first reason).
#pragma once

#include <array>
#include <string>
#include <vector>

#include "explorer/search/search.hpp"
#include "spec/scenario.hpp"
#include "spec/semantics.hpp"
#include "spec/step_result.hpp"

namespace fp8sm::explorer {

// Left to right as drawn.
enum class Part { Program, Autocast, Checkpoint, Ownership, Grad, Modules, Registry };
inline constexpr std::array<Part, 7> kAllParts = {Part::Program, Part::Autocast, Part::Checkpoint, Part::Ownership,
                                                  Part::Grad,    Part::Modules,  Part::Registry};

// A short identifier ("OW") and what it is ("ownership (F)").
const char* part_id(Part part);
const char* part_title(Part part);

// What a note is about, so that tests and renderers can tell them apart without reading text.
enum class NoteKind { Statement, ForwardUpdate, BackwardUpdate, Registry, Owner, Raised, Escaped, StepEnd, Violation, Other };

struct SequenceItem {
  bool message = true;  // a message from `from` to `to`; else a note over `from` .. `to`
  Part from = Part::Program;
  Part to = Part::Program;
  NoteKind note = NoteKind::Other;  // a note's
  std::string text;                 // plain text: each renderer escapes it
};

struct SequenceStep {
  std::vector<SequenceItem> items;
  spec::StepResult result;  // the run report's counts, exceptions and violations
};

struct RunSequence {
  std::string title;  // the scenario's
  spec::Semantics semantics = spec::Semantics::Fp8sm;
  std::vector<SequenceStep> steps;
};

// Runs `program` under `semantics` (twice, as `explorer run` does, for I8) and records it.
RunSequence record_run(const std::string& title, const spec::Program& program, spec::Semantics semantics);

// A search's counterexample recorded as a run, titled with its invariant, length and program:
// what --mermaid and --dot draw for each.
RunSequence record_counterexample(const Counterexample& counterexample, spec::Semantics semantics);

}  // namespace fp8sm::explorer
