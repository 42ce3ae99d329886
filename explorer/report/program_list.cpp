#include "explorer/report/program_list.hpp"

#include <vector>

#include "explorer/model/scenario_run.hpp"
#include "explorer/report/json_document.hpp"
#include "explorer/report/report.hpp"
#include "spec/scenario_parser.hpp"

namespace fp8sm::explorer {

spec::Program path_program(const SearchPath& path, const AlphabetOptions& alphabet) {
  return program_of(path.statements(), alphabet);
}

int program_depth(const spec::Program& program) {
  int depth = 0;
  for (const spec::Statement& s : program.statements) depth += s.op != spec::Op::Close ? 1 : 0;
  return depth;
}

bool listed_beyond(const spec::Program& program, int beyond) {
  const int depth = program_depth(program);
  if (depth <= beyond) return true;
  int linears_in_checkpoints = 0;
  bool backward = false;
  std::vector<bool> inside_checkpoint{false};  // per open block, and the program's level
  for (const spec::Statement& s : program.statements) {
    if (s.op == spec::Op::Close) {
      inside_checkpoint.pop_back();
      continue;
    }
    backward = backward || s.op == spec::Op::Backward;
    if (s.op == spec::Op::Linear && inside_checkpoint.back()) ++linears_in_checkpoints;
    if (spec::opens_block(s.op)) {
      const bool checkpoint = s.op == spec::Op::CheckpointReentrant || s.op == spec::Op::CheckpointNonReentrant;
      inside_checkpoint.push_back(inside_checkpoint.back() || checkpoint);
    }
  }
  return backward && linears_in_checkpoints >= depth - beyond;
}

std::string program_line(const spec::Program& program, std::uint64_t index, spec::Semantics semantics, bool json) {
  std::string one_line = spec::print_scenario_one_line(program);
  if (!json) return one_line + "\n";
  Json document = json_document(kProgramFormat);
  document["index"] = index;
  document["depth"] = program_depth(program);
  document["program"] = std::move(one_line);
  document["semantics"] = std::string(spec::name(semantics));
  document["steps"] = run_steps_json(program, run_scenario(program, semantics));
  return json_line(document);
}

}  // namespace fp8sm::explorer
