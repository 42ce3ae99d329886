#include "explorer/model/model_state.hpp"

// XXH3 inlined here (the same function, so the same fingerprints as libxxhash's): the hash of
// every successor's canonical bytes is a tenth of a search's instructions, and the library's
// out-of-line copy cannot be specialised for this call.
#define XXH_INLINE_ALL
#include <xxhash.h>

#include <algorithm>
#include <cstdlib>

#include "explorer/model/canonical_state.hpp"
#include "explorer/model/numerics_renaming.hpp"
#include "explorer/model/ownership_scopes.hpp"
#include "explorer/model/transparency.hpp"
#include "spec/scenario_transform.hpp"

namespace fp8sm::explorer {

using spec::Op;
using spec::Statement;

std::vector<std::string> carried_state(const spec::InvariantSet& checks) {
  const CheckedObservers carried = CheckedObservers::for_checks(checks);
  std::vector<std::string> parts = {"the model (machine, tape, checkpoint ledger, blocks)"};
  if (carried.ownership) parts.emplace_back("ownership scopes and live owners (I3)");
  if (carried.numerics) parts.emplace_back("symbolic metas, stashes and checkpoint extents (I4, I5, I8, I9)");
  if (checks.empty() || checks.contains(spec::Invariant::I8)) {
    parts.emplace_back("step results and the run without checkpoints (I8)");
  }
  return parts;
}

ModelRunner::ModelRunner(spec::Semantics semantics, const spec::InvariantSet& checks, bool canonical_ids,
                         const Abstractions& abstractions)
    : semantics_(semantics),
      carried_(CheckedObservers::for_checks(checks)),
      with_reference_(checks.empty() || checks.contains(spec::Invariant::I8)),
      canonical_ids_(canonical_ids),
      abstractions_(abstractions),
      program_(scratch_.program.model, &program_checker_),
      program_checker_(scratch_.program.observers, carried_),
      reference_(scratch_.reference.model, &reference_checker_),
      reference_checker_(scratch_.reference.observers, carried_) {
  initial(scratch_);
  program_.keep_steps(false);
  reference_.keep_steps(false);
  program_checker_.attach(program_.machine());
  reference_checker_.attach(reference_.machine());
  program_checker_.report_to(verdict_);
  reference_checker_.report_to(ignored_);
}

void ModelRunner::initial(ModelState& state) const {
  state.facts = ProgramFacts{};
  state.program.model = interpreter::FlatInterpreter::initial_state(semantics_);
  state.program.observers = InvariantChecker<FlatStorage>::initial_state();
  if (canonical_ids_) canonicalize(state.program, carried_);  // its first graph and counters, as ranks
  if (renames_numerics()) state.program.model.step = kRebasedStep;  // the number every step gets
  if (with_reference_) state.reference = state.program;
}

void ModelRunner::copy(ModelState& to, const ModelState& from) const {
  to.facts = from.facts;
  copy_run(to.program, from.program);
  if (with_reference_) copy_run(to.reference, from.reference);
}

// The observers' lists are copied as far as they are used (copy_used): most of their
// kilobytes are empty slots.
void ModelRunner::copy_run(RunState& to, const RunState& from) const {
  to.model = from.model;
  if (carried_.forward_updates) to.observers.program_grad = from.observers.program_grad;
  if (carried_.ownership) copy_used(to.observers.ownership, from.observers.ownership);
  if (carried_.numerics) copy_used(to.observers.numerics, from.observers.numerics);
}

void ModelRunner::bind(ModelState& state) {
  if (bound_ == &state) return;  // a chain's links are one state, one statement after another
  bound_ = &state;
  program_.bind(state.program.model);
  program_checker_.bind(state.program.observers);
  if (!with_reference_) return;
  reference_.bind(state.reference.model);
  reference_checker_.bind(state.reference.observers);
}

namespace {
// Programs of up to kMaxSearchDepth (8) statements log at most 16, closing braces included.
constexpr std::size_t kForgetLogPast = 16;
}  // namespace

const Verdict& ModelRunner::apply(ModelState& state, const Statement& s) {
  verdict_.clear();
  ignored_.clear();
  ProgramFacts& facts = state.facts;
  bind(state);
  // Decided before the statement: the one that settles I8 is the last the reference sees.
  const bool feeds_reference = runs_reference(state);
  // The reference's divergence (spec::ReferenceDivergence, statement by statement; a tape's
  // and a checkpoint's only by the statements the program executes).
  spec::apply_divergence(s, facts.inside_checkpoint(), !program_.skipping(), program_.input_lacks_grad(),
                         facts.diverged, facts.tape_freed);
  // The reference sees the program without checkpoint blocks and recompute_uncaptured
  // (spec::without_checkpoints, statement by statement).
  const bool reference_skips = spec::follow_blocks(s, facts.open, facts.checkpoints_open);
  if (s.op == Op::Save) {
    facts.tape_saved[s.name] = true;
  } else if (s.op == Op::Linear) {
    facts.modules_used = std::max<std::uint8_t>(facts.modules_used, static_cast<std::uint8_t>(s.name + 1));
  }

  const std::uint32_t program_step = state.program.model.step;
  const std::uint32_t reference_step = state.reference.model.step;
  const IdsBefore program_before = ids_before(state.program, s.op);
  const IdsBefore reference_before = feeds_reference ? ids_before(state.reference, s.op) : IdsBefore{};
  program_.feed(s);
  if (feeds_reference && !reference_skips) reference_.feed(s);
  if (s.op == Op::Step) finish_step(state, program_step, reference_step);
  // The log is not part of a state (canonical_state.hpp: only the bodies that replay it), so
  // forgetting what no body reads merges nothing; it keeps a program of any length within the
  // log's capacity. Programs of a depth-bounded search fit it whole and never get here.
  if (state.program.model.log.size() > kForgetLogPast) program_.forget_unreadable_log();
  if (feeds_reference && state.reference.model.log.size() > kForgetLogPast) reference_.forget_unreadable_log();
  // What I3 can no longer be violated by goes (abstractions.hpp); the node ids it named may go
  // with it, so the ids are renamed again where it did.
  bool program_settled = false;
  bool reference_settled = false;
  if (carried_.ownership && abstractions_.settled_ownership) {
    program_settled = forget_what_cannot_violate(state.program.observers.ownership);
    if (feeds_reference) reference_settled = forget_what_cannot_violate(state.reference.observers.ownership);
  }
  if (canonical_ids_) {
    if (program_settled || !keeps_canonical_ids(s.op, program_before, state.program)) {
      canonicalize(state.program, carried_);
    }
    if (feeds_reference &&
        (reference_settled || !(reference_skips || keeps_canonical_ids(s.op, reference_before, state.reference)))) {
      canonicalize(state.reference, carried_);
    }
  }
  // After the ids: the values are named in the order the canonical state lists them.
  if (s.op == Op::Step && renames_numerics()) {
    rename_numerics_at_step_start(state.program, runs_reference(state) ? &state.reference : nullptr,
                                  !abstractions_.unsound_held_steps_current);
  } else if (carried_.numerics && abstractions_.numerics_within_step) {
    if (!judges_transparency(state)) {
      (void)rename_numerics_within_step(state.program, !abstractions_.unsound_rename_with_copies);
    } else if (abstractions_.numerics_within_step_with_reference) {
      (void)rename_numerics_within_step_together(state.program, state.reference,
                                                 !abstractions_.unsound_rename_program_alone);
    }
  }
  return verdict_;
}

const Verdict& ModelRunner::end_here(ModelState& state) {
  verdict_.clear();
  ignored_.clear();
  // The end of the file ends the step: with no observer of a step's end and no I8, that
  // violates nothing, and the state is discarded after.
  if (!carried_.judge_step_ends() && !with_reference_) return verdict_;
  bind(state);
  const std::uint32_t program_step = state.program.model.step;
  const std::uint32_t reference_step = state.reference.model.step;
  program_.end_of_file();
  if (runs_reference(state)) reference_.end_of_file();
  finish_step(state, program_step, reference_step);
  return verdict_;
}

// After `step` (or at the end of the file): the step's own verdict, then I8 against the
// reference's same step, when both ended one (each run's step number was given before).
void ModelRunner::finish_step(ModelState& state, std::uint32_t program_step, std::uint32_t reference_step) {
  if (!with_reference_) return;
  const bool program_ended = state.program.model.step != program_step;
  const bool reference_ended = state.reference.model.step != reference_step;
  ProgramFacts& facts = state.facts;
  if (facts.reference_comparable && program_ended && reference_ended) {
    const TransparencyJudgement judgement = judge_transparency(
        outcome(program_.last_step()), outcome(reference_.last_step()),
        same_numerics(state.program.observers.numerics.modules, state.reference.observers.numerics.modules),
        facts.diverged);
    if (judgement.violation) verdict_.add(*judgement.violation);
    facts.reference_comparable = judgement.later_steps_comparable;
  }
}

bool ModelRunner::judges_transparency(const ModelState& state) const {
  if (!runs_reference(state)) return false;
  if (!abstractions_.unsound_settle_at_first_difference) return true;
  const auto& mine = state.program.model.current.raised;
  const auto& theirs = state.reference.model.current.raised;
  return mine.size() == theirs.size() && std::equal(mine.begin(), mine.end(), theirs.begin());
}

void ModelRunner::write_state(const ModelState& state, ByteWriter& bytes, PartMarks* program_marks,
                              PartMarks* reference_marks, std::size_t* facts_end, std::size_t* program_end) const {
  bytes.clear();
  StepResultsWritten step_results;
  step_results.checked = with_reference_;
  step_results.written = judges_transparency(state);
  if (step_results.written && abstractions_.relative_step_counts) {
    const interpreter::StepTally& mine = state.program.model.current;
    const interpreter::StepTally& theirs = state.reference.model.current;
    step_results.forward_both = std::min(mine.forward_updates, theirs.forward_updates);
    step_results.backward_both = std::min(mine.backward_updates, theirs.backward_updates);
    step_results.saturated = abstractions_.unsound_saturate_step_counts;
  }
  write_canonical(state.facts, with_reference_, step_results.written, bytes);
  if (facts_end != nullptr) *facts_end = bytes.size();
  write_canonical(state.program, carried_, canonical_ids_, step_results, abstractions_, bytes, program_marks);
  if (program_end != nullptr) *program_end = bytes.size();
  if (step_results.written) {
    write_canonical(state.reference, carried_, canonical_ids_, step_results, abstractions_, bytes, reference_marks);
  } else if (with_reference_ && reference_marks != nullptr) {
    // The growth analysis names the same parts for every state: the reference's, empty.
    thread_local ByteWriter ignored;
    ignored.clear();
    PartMarks names(ignored.data());
    write_canonical(state.reference, carried_, canonical_ids_, step_results, abstractions_, ignored, &names);
    reference_marks->empty_parts_like(names, bytes.out());
  }
  if (bytes.size() > ByteWriter::kStateBound) std::abort();  // cannot happen: the bound is the state's size, four times
}

namespace {
Fingerprint fingerprint_of(const ByteWriter& bytes) {
  const XXH128_hash_t hash = XXH3_128bits(bytes.data(), bytes.size());
  return Fingerprint{hash.high64, hash.low64};
}
}  // namespace

Fingerprint ModelRunner::fingerprint(const ModelState& state) const {
  thread_local ByteWriter bytes;  // reused: the fingerprint is on the hot path
  write_state(state, bytes);
  return fingerprint_of(bytes);
}

ModelRunner::Parts ModelRunner::cut_into_parts(const ModelState& state, std::vector<std::string>* names) const {
  // Reused, as fingerprint's: a writer's buffer is several states wide, and zeroed when made (the
  // growth analysis asks for every state's parts).
  thread_local ByteWriter bytes;
  bytes.clear();  // sizes a new buffer before the marks take its address
  PartMarks program(bytes.data());
  PartMarks reference(bytes.data());
  std::size_t facts_end = 0;
  std::size_t program_end = 0;
  write_state(state, bytes, &program, &reference, &facts_end, &program_end);
  Parts result;
  result.fingerprint = fingerprint_of(bytes);
  result.parts.emplace_back(bytes.data(), facts_end);
  if (names != nullptr) names->emplace_back("facts");
  // A run's parts: each from its mark to the next one, the last to the run's end.
  auto run_parts = [&](const PartMarks& marks, const char* prefix, std::size_t run_end) {
    const auto& starts = marks.starts();
    for (std::size_t i = 0; i < starts.size(); ++i) {
      const std::size_t end = i + 1 < starts.size() ? starts[i + 1].second : run_end;
      result.parts.emplace_back(bytes.data() + starts[i].second, end - starts[i].second);
      if (names != nullptr) names->push_back(std::string(prefix) + starts[i].first);
    }
  };
  run_parts(program, "program.", program_end);
  if (with_reference_) run_parts(reference, "reference.", bytes.size());
  return result;
}

ModelRunner::Parts ModelRunner::canonical_parts(const ModelState& state) const { return cut_into_parts(state, nullptr); }

std::vector<std::string> ModelRunner::part_names(const ModelState& state) const {
  std::vector<std::string> names;
  cut_into_parts(state, &names);
  return names;
}

std::string ModelRunner::canonical_bytes(const ModelState& state) const {
  ByteWriter bytes;
  write_state(state, bytes);
  return std::string(bytes.data(), bytes.size());
}

}  // namespace fp8sm::explorer
