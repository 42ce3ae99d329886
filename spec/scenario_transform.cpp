#include "spec/scenario_transform.hpp"

#include <vector>

namespace fp8sm::spec {

Program without_checkpoints(const Program& program) {
  Program out;
  out.module_names = program.module_names;
  out.tape_names = program.tape_names;
  std::vector<bool> dropped_block;  // per open block: is it a checkpoint being removed?
  for (const Statement& s : program.statements) {
    if (opens_block(s.op)) {
      dropped_block.push_back(is_checkpoint(s.op));
      if (is_checkpoint(s.op)) continue;
    } else if (s.op == Op::Close) {
      const bool dropped = !dropped_block.empty() && dropped_block.back();
      if (!dropped_block.empty()) dropped_block.pop_back();
      if (dropped) continue;
    } else if (s.op == Op::RecomputeUncaptured) {
      continue;
    }
    out.statements.push_back(s);
  }
  return out;
}

bool behaves_differently_in_recompute(const Program& program) {
  for (const Statement& s : program.statements) {
    if (s.op == Op::RaiseRecompute || s.op == Op::RecomputeUncaptured) return true;
  }
  return false;
}

}  // namespace fp8sm::spec
