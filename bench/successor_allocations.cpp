// How many heap allocations one successor of the exhaustive search costs, and in which part:
// copying the parent's carried parts, executing the statement, taking the fingerprint of its
// canonical bytes, and judging the end of the program there. With the flat model state every
// figure is zero (tests/explorer/test_flat_state.cpp asserts it); this prints them.
//
// It walks every program of up to `--depth` statements depth first (explorer/model/successor_walk.hpp:
// without merging equal states, so the figures are per successor tried), counting the calls of
// the global operator new made by each part.
//
//   bench/successor_allocations [--depth N] [--semantics fp8sm|upstream|pr3213] [--check I1,...]
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

#include "explorer/model/successor_walk.hpp"
#include "spec/invariants.hpp"
#include "spec/semantics.hpp"
#include "tests/counting_operator_new.hpp"

namespace {

struct Part {
  const char* name;
  unsigned long long allocations = 0;
  unsigned long long most = 0;  // in one successor
  void add(unsigned long long n) {
    allocations += n;
    most = std::max(most, n);
  }
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Heap allocations per successor of the exhaustive search"};
  int depth = 4;
  std::string semantics = "fp8sm";
  std::string checks;
  app.add_option("--depth", depth, "statements per program")->check(CLI::Range(1, 5));
  app.add_option("--semantics", semantics, "fp8sm, upstream or pr3213");
  app.add_option("--check", checks, "the invariants checked (default: all)");
  CLI11_PARSE(app, argc, argv);
  const auto parsed_semantics = fp8sm::spec::parse_semantics(semantics);
  if (!parsed_semantics) {
    fmt::print(stderr, "successor_allocations: unknown semantics '{}'\n", semantics);
    return 2;
  }
  fp8sm::spec::InvariantSet check_set;
  for (std::size_t at = 0; at < checks.size();) {
    const std::size_t comma = std::min(checks.find(',', at), checks.size());
    const auto invariant = fp8sm::spec::parse_invariant(checks.substr(at, comma - at));
    if (!invariant) {
      fmt::print(stderr, "successor_allocations: --check: unknown invariant '{}'\n", checks.substr(at, comma - at));
      return 2;
    }
    check_set.add(*invariant);
    at = comma + 1;
  }

  Part parts[] = {{"copy the parent"}, {"execute the statement"}, {"fingerprint"}, {"judge the program's end"}};
  fp8sm::explorer::ModelRunner runner(*parsed_semantics, check_set, true);
  auto around = [&](fp8sm::explorer::SuccessorPart part, auto&& run) {
    const unsigned long long before = counting_new::calls;
    counting_new::counting = true;
    run();
    counting_new::counting = false;
    parts[static_cast<int>(part)].add(counting_new::calls - before);
  };
  fp8sm::explorer::SuccessorWalk<decltype(around)> walk(runner, depth, around);
  const unsigned long long successors = walk.run(depth);
  fmt::print("{}, depth {}, {}: {} successors\n", semantics, depth, checks.empty() ? "all invariants" : checks, successors);
  for (const Part* part : {&parts[0], &parts[1], &parts[2], &parts[3]}) {
    fmt::print("  {:<28} {:8.1f} allocations per successor (at most {})\n", part->name,
               static_cast<double>(part->allocations) / static_cast<double>(successors), part->most);
  }
  return 0;
}
