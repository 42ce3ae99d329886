#include "spec/scenario_transform.hpp"

#include <vector>

namespace fp8sm::spec {

Program without_checkpoints(const Program& program) {
  Program out;
  out.module_names = program.module_names;
  out.tape_names = program.tape_names;
  std::vector<Op> open;
  int checkpoints_open = 0;
  for (const Statement& s : program.statements) {
    if (!follow_blocks(s, open, checkpoints_open)) out.statements.push_back(s);
  }
  return out;
}

bool recompute_specific(Op op, bool inside_checkpoint) {
  if (op == Op::RecomputeUncaptured) return true;
  return inside_checkpoint && (op == Op::RaiseOriginal || op == Op::RaiseRecompute);
}

void ReferenceDivergence::apply(const Statement& s, bool inside_checkpoint, bool executed, bool input_lacks_grad) {
  const bool names_tape = (s.op == Op::Save || s.op == Op::Backward) && s.name != kCurrentGraph;
  if (names_tape && s.name >= tape_freed.size()) tape_freed.resize(s.name + 1u, false);
  apply_divergence(s, inside_checkpoint, executed, input_lacks_grad, diverged, tape_freed);
}

std::vector<bool> diverged_steps(const Program& program, const std::vector<bool>& executed,
                                 const std::vector<bool>& input_lacks_grad) {
  std::vector<bool> steps;
  std::vector<Op> open;
  int checkpoints_open = 0;
  ReferenceDivergence divergence;
  bool step_has_statements = false;
  for (std::size_t i = 0; i < program.statements.size(); ++i) {
    const Statement& s = program.statements[i];
    if (s.op == Op::Step) {
      steps.push_back(divergence.diverged);
      step_has_statements = false;
      continue;
    }
    step_has_statements = true;
    divergence.apply(s, checkpoints_open > 0, i < executed.size() && executed[i],
                     i < input_lacks_grad.size() && input_lacks_grad[i]);
    follow_blocks(s, open, checkpoints_open);  // for the next statement's inside_checkpoint
  }
  if (step_has_statements) steps.push_back(divergence.diverged);
  return steps;
}

}  // namespace fp8sm::spec
