// Programs derived from a program.
#pragma once

#include <vector>

#include "spec/scenario.hpp"

namespace fp8sm::spec {

// The same program with every checkpoint replaced by its body and every
// recompute_uncaptured removed: the reference of invariant I8 (checkpoint transparency).
Program without_checkpoints(const Program& program);

// without_checkpoints' rule, statement by statement, for whoever walks a program beside its
// reference (without_checkpoints itself, diverged_steps, the search's flat facts): what `s`
// does to the blocks open around it, and whether the reference leaves `s` out (a checkpoint
// block's opening and its close, and every recompute_uncaptured). `open`: the ops that opened
// the blocks still open, innermost last; `checkpoints_open`: how many of them are checkpoints,
// so that `checkpoints_open > 0` is the next statement's inside_checkpoint. A close with no
// block open closes nothing, and is kept.
template <class OpenBlocks, class Count>
bool follow_blocks(const Statement& s, OpenBlocks& open, Count& checkpoints_open) {
  if (opens_block(s.op)) {
    open.push_back(s.op);
    if (!is_checkpoint(s.op)) return false;
    ++checkpoints_open;
    return true;
  }
  if (s.op == Op::Close) {
    if (open.empty()) return false;
    const bool checkpoint = is_checkpoint(open.back());
    open.pop_back();
    if (checkpoint) --checkpoints_open;
    return checkpoint;
  }
  return s.op == Op::RecomputeUncaptured;
}

// Whether the statement behaves differently by design when a recompute runs it: raise original
// or raise recompute inside a checkpoint block, or recompute_uncaptured anywhere. A program
// with one is not the same program as its reference, and I8 does not apply from there on.
bool recompute_specific(Op op, bool inside_checkpoint);

// Where a program and its reference part for reasons that are not the FP8 state, so that I8
// compares them no further: a recompute-specific statement; a backward of a tape that a
// backward without retain ran over since its last save (torch refuses such a graph at its
// first freed node, and a checkpoint is a node even around an empty body, so the program can
// raise where its reference does not); or a reentrant checkpoint executed with grad on, on an
// input that does not require grad (`input_lacks_grad`, after `data`: torch records no node,
// so its body's modules get no gradient, where the reference's do). Only the statements the
// program executed count for the tape and the checkpoint (`executed`: false for one an
// exception made it skip, such as a `save` after a caught raise in the same `try`); a
// recompute-specific statement counts as written, since a recompute replays a checkpoint's
// body, skipped statements too.
struct ReferenceDivergence {
  bool diverged = false;
  std::vector<bool> tape_freed;  // per tape: backpropagated without retain since its last save

  void apply(const Statement& s, bool inside_checkpoint, bool executed, bool input_lacks_grad = false);
};

// The rule of ReferenceDivergence::apply on any per-tape flags: `tape_freed[s.name]` must
// exist for a statement that names a tape (the search keeps the flags in a fixed array).
template <class TapeFlags>
void apply_divergence(const Statement& s, bool inside_checkpoint, bool executed, bool input_lacks_grad,
                      bool& diverged, TapeFlags& tape_freed) {
  diverged = diverged || recompute_specific(s.op, inside_checkpoint);
  diverged = diverged || (s.op == Op::CheckpointReentrant && executed && input_lacks_grad);
  if ((s.op != Op::Save && s.op != Op::Backward) || s.name == kCurrentGraph || !executed) return;
  if (s.op == Op::Save) {
    tape_freed[s.name] = false;
    return;
  }
  diverged = diverged || tape_freed[s.name];
  tape_freed[s.name] = tape_freed[s.name] || !s.retain;
}

// Per step of the program: whether it has diverged from its reference by the step's end.
// `executed` and `input_lacks_grad`: per statement of the program, what its run saw (see above).
std::vector<bool> diverged_steps(const Program& program, const std::vector<bool>& executed,
                                 const std::vector<bool>& input_lacks_grad);

}  // namespace fp8sm::spec
