#include "explorer/model_state.hpp"

#include <algorithm>

#include "explorer/transparency.hpp"
#include "spec/scenario_transform.hpp"
#include "statemachine/encoder.hpp"

namespace fp8sm::explorer {

using spec::Op;
using spec::Statement;

void Verdict::merge(const StepVerdict& step) {
  for (spec::Invariant i : spec::kAllInvariants) {
    if (step.violations.contains(i)) add(i, step.first_reason.at(i));
  }
}

void Verdict::add(spec::Invariant invariant, const std::string& reason) {
  if (!violations.contains(invariant)) reasons[invariant] = reason;
  violations.add(invariant);
}

ModelState::Run ModelState::fresh_run(spec::Semantics semantics) {
  Run run;
  run.checker = std::make_unique<InvariantChecker>();
  run.interpreter = std::make_unique<interpreter::Interpreter>(semantics, run.checker.get());
  return run;
}

ModelState::Run ModelState::copy_run(const Run& run) {
  Run copy;
  copy.checker = std::make_unique<InvariantChecker>(*run.checker);
  copy.interpreter = std::make_unique<interpreter::Interpreter>(*run.interpreter, copy.checker.get());
  return copy;
}

void ModelState::assign_run(Run& to, const Run& from) {
  if (!from.checker) {
    to = Run{};
  } else if (!to.checker) {
    to = copy_run(from);
  } else {
    *to.checker = *from.checker;
    to.interpreter->assign(*from.interpreter);  // rebinds the checker to to's own machine
  }
}

namespace {
spec::InvariantSet all_if_empty(const spec::InvariantSet& checks) {
  if (!checks.empty()) return checks;
  spec::InvariantSet all;
  for (spec::Invariant i : spec::kAllInvariants) all.add(i);
  return all;
}
}  // namespace

std::vector<std::string> carried_state(const spec::InvariantSet& checks) {
  const spec::InvariantSet checked = all_if_empty(checks);
  const InvariantChecker::Carried carried = InvariantChecker::carried_for(checked);
  std::vector<std::string> parts = {"the model (machine, tape, checkpoint ledger, blocks)"};
  if (carried.owners) parts.emplace_back("ownership scopes and live owners (I3)");
  if (carried.numerics_and_stashes) parts.emplace_back("symbolic metas, stashes and checkpoint extents (I4, I5, I8, I9)");
  if (checked.contains(spec::Invariant::I8)) parts.emplace_back("step results and the run without checkpoints (I8)");
  return parts;
}

ModelState::ModelState(spec::Semantics semantics, const spec::InvariantSet& checks)
    : carried_(InvariantChecker::carried_for(all_if_empty(checks))),
      with_reference_(all_if_empty(checks).contains(spec::Invariant::I8)),
      program_(fresh_run(semantics)) {
  if (with_reference_) reference_ = fresh_run(semantics);
}

ModelState::ModelState(const ModelState& other)
    : carried_(other.carried_),
      with_reference_(other.with_reference_),
      program_(copy_run(other.program_)),
      reference_(other.with_reference_ ? copy_run(other.reference_) : Run{}),
      divergence_(other.divergence_),
      reference_comparable_(other.reference_comparable_),
      open_(other.open_),
      saved_(other.saved_),
      modules_used_(other.modules_used_) {}

ModelState& ModelState::operator=(const ModelState& other) {
  if (this == &other) return *this;
  carried_ = other.carried_;
  with_reference_ = other.with_reference_;
  assign_run(program_, other.program_);
  assign_run(reference_, other.reference_);
  divergence_ = other.divergence_;
  reference_comparable_ = other.reference_comparable_;
  open_ = other.open_;
  saved_ = other.saved_;
  modules_used_ = other.modules_used_;
  return *this;
}

bool ModelState::inside_checkpoint() const {
  return std::any_of(open_.begin(), open_.end(), spec::is_checkpoint);
}

Verdict ModelState::apply(const Statement& s) {
  divergence_.apply(s, inside_checkpoint());
  // The reference sees the program without checkpoint blocks and recompute_uncaptured
  // (spec::without_checkpoints, statement by statement).
  bool reference_skips = s.op == Op::RecomputeUncaptured;
  if (spec::opens_block(s.op)) {
    open_.push_back(s.op);
    reference_skips = spec::is_checkpoint(s.op);
  } else if (s.op == Op::Close) {
    reference_skips = spec::is_checkpoint(open_.back());
    open_.pop_back();
  } else if (s.op == Op::Save) {
    if (s.name >= saved_.size()) saved_.resize(s.name + 1u, false);
    saved_[s.name] = true;
  } else if (s.op == Op::Linear) {
    modules_used_ = std::max(modules_used_, s.name + 1);
  }

  program_.interpreter->feed(s);
  if (with_reference_ && !reference_skips) reference_.interpreter->feed(s);
  if (s.op == Op::Step) return finish_step(false);
  Verdict verdict;
  verdict.merge(program_.checker->take_current());
  if (with_reference_) reference_.checker->take_current();  // the reference's own verdicts do not count
  return verdict;
}

Verdict ModelState::end_here() const {
  ModelState copy(*this);
  return copy.finish_step(true);
}

// After `step` (or at the end of the file): the step's own verdict, then I8 against the
// reference's same step.
Verdict ModelState::finish_step(bool end_of_file) {
  if (end_of_file) program_.interpreter->end_of_file();
  Verdict verdict;
  const std::vector<spec::StepResult> steps = program_.interpreter->take_steps();
  const std::vector<StepVerdict> verdicts = program_.checker->take_verdicts();
  for (const StepVerdict& v : verdicts) verdict.merge(v);
  verdict.merge(program_.checker->take_current());
  if (!with_reference_) return verdict;
  if (end_of_file) reference_.interpreter->end_of_file();
  const std::vector<spec::StepResult> reference_steps = reference_.interpreter->take_steps();
  const std::vector<StepVerdict> reference_verdicts = reference_.checker->take_verdicts();
  reference_.checker->take_current();
  if (reference_comparable_ && !steps.empty() && !reference_steps.empty()) {
    const TransparencyJudgement judgement =
        judge_transparency(steps.back(), verdicts.back().numerics, reference_steps.back(),
                           reference_verdicts.back().numerics, divergence_.diverged);
    if (!judgement.violation.empty()) verdict.add(spec::Invariant::I8, judgement.violation);
    reference_comparable_ = judgement.later_steps_comparable;
  }
  return verdict;
}

std::string ModelState::encode(bool canonical_ids) const {
  std::string out;
  encode(out, canonical_ids);
  return out;
}

void ModelState::encode(std::string& out, bool canonical_ids) const {
  // One id namespace per run: the program's and the reference's ids are unrelated. The
  // search's own facts (no ids) go with the program's run, which saves a third finish().
  thread_local statemachine::Encoder canonical(true);
  thread_local statemachine::Encoder raw(false);
  statemachine::Encoder& encoder = canonical_ids ? canonical : raw;
  using statemachine::put;
  program_.interpreter->encode(encoder, with_reference_);
  program_.checker->encode(encoder, carried_);
  if (with_reference_) {
    put(encoder, divergence_.diverged | (reference_comparable_ << 1), 1);
    put(encoder, divergence_.tape_freed.size(), 2);
    for (bool b : divergence_.tape_freed) put(encoder, b, 1);
  }
  put(encoder, open_.size(), 2);
  for (spec::Op op : open_) put(encoder, static_cast<std::uint64_t>(op), 1);
  put(encoder, saved_.size(), 2);
  for (bool b : saved_) put(encoder, b, 1);
  put(encoder, static_cast<std::uint32_t>(modules_used_), 2);
  encoder.finish(out);
  if (!with_reference_) return;
  reference_.interpreter->encode(encoder, with_reference_);
  reference_.checker->encode(encoder, carried_);
  encoder.finish(out);
}

}  // namespace fp8sm::explorer
