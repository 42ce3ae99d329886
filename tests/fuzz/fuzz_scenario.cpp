// libFuzzer target: any bytes are a scenario file. What the parser refuses must be refused
// with a ParseError (one line, FILE:LINE:COL); what it accepts must print and parse back to the
// same program, and run on the model under every semantics without a crash, a sanitizer report
// or any other exception. Programs are capped (kMaxStatements) so that each input stays fast:
// the language's own nesting limits bound the rest.
//
//   scripts/fuzz.sh [SECONDS]      (seeded with spec/catalogue/*.scn and tests/scenarios/*.scn)
#include <fmt/core.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <string>
#include <string_view>

#include "explorer/model/scenario_run.hpp"
#include "spec/scenario_parser.hpp"
#include "spec/semantics.hpp"

namespace {

constexpr std::size_t kMaxStatements = 400;

[[noreturn]] void fail(const char* what, const std::string& detail) {
  fmt::print(stderr, "fuzz_scenario: {}\n{}\n", what, detail);
  std::abort();
}

bool same(const fp8sm::spec::Program& a, const fp8sm::spec::Program& b) {
  if (a.statements.size() != b.statements.size()) return false;
  for (std::size_t i = 0; i < a.statements.size(); ++i) {
    const auto& x = a.statements[i];
    const auto& y = b.statements[i];
    if (x.op != y.op || x.name != y.name || x.retain != y.retain) return false;
  }
  return a.module_names == b.module_names && a.tape_names == b.tape_names;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace fp8sm;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  spec::Program program;
  try {
    program = spec::parse_scenario(text, "fuzz");
  } catch (const spec::ParseError& e) {
    const std::string what = e.what();
    if (what.rfind("fuzz:", 0) != 0 || what.find('\n') != std::string::npos) fail("malformed error", what);
    return 0;
  }
  const std::string printed = spec::print_scenario(program);
  if (!same(spec::parse_scenario(printed, "printed"), program)) fail("print/parse round trip differs", printed);
  if (program.statements.size() > kMaxStatements) return 0;
  for (spec::Semantics semantics : spec::kAllSemantics) explorer::run_scenario(program, semantics);
  return 0;
}
