// The scenario language as data: a program is a flat list of statements in source order.
//
// Blocks are an opening statement (autocast, checkpoint, no_grad, try) and a matching Close.
// Keeping the program flat (rather than a tree) is what lets the interpreter run it one
// statement at a time, exactly as the explorer grows programs, and lets a checkpoint keep
// the slice of statements that its recompute replays.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fp8sm::spec {

enum class Op : std::uint8_t {
  // Opening statements of blocks.
  AutocastOn,
  AutocastOff,
  CheckpointReentrant,
  CheckpointNonReentrant,
  NoGrad,
  Try,
  // The closing brace of the innermost open block.
  Close,
  // Simple statements.
  Linear,               // name = module index
  RaiseAlways,
  RaiseOriginal,        // raises only when no recompute is in progress
  RaiseRecompute,       // raises only while some recompute is in progress
  RecomputeUncaptured,
  Save,                 // name = tape index
  Backward,             // name = tape index or kCurrentGraph; retain
  Step,
  // Last, so that the codes of the statements before it stay what they were (search paths).
  Data,                 // the chain restarts from a fresh input that does not require grad
};

inline constexpr std::uint16_t kCurrentGraph = 0xFFFF;

struct SourcePos {
  int line = 0;    // 1-based; 0 when the statement was built by a program, not parsed
  int column = 0;  // 1-based
};

struct Statement {
  Op op = Op::Step;
  std::uint16_t name = 0;  // module index (Linear), tape index (Save, Backward) or kCurrentGraph
  bool retain = false;     // Backward only
  SourcePos pos;
};

// A statement built by a program (no source position).
inline Statement make_statement(Op op, std::uint16_t name = 0, bool retain = false) {
  Statement s;
  s.op = op;
  s.name = name;
  s.retain = retain;
  return s;
}

// The opening statements of blocks precede Close in Op.
inline bool opens_block(Op op) { return op < Op::Close; }
inline bool is_checkpoint(Op op) { return op == Op::CheckpointReentrant || op == Op::CheckpointNonReentrant; }

struct Program {
  std::vector<Statement> statements;
  std::vector<std::string> module_names;  // index = Statement::name of Linear
  std::vector<std::string> tape_names;    // index = Statement::name of Save / Backward
};

}  // namespace fp8sm::spec
