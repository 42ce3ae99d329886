// How many heap allocations one successor of the exhaustive search costs, and in which part:
// copying the parent state, executing the statement, encoding the result for its fingerprint,
// and judging the end of the program there. The flat model state (one fixed-size value per
// state) is meant to bring every figure to zero; this prints how far there is to go.
//
// It walks every program of up to `--depth` statements depth first (without merging equal
// states: the figures are per successor tried), counting the calls of the global operator new
// made by each part.
//
//   bench/successor_allocations [--depth N] [--semantics fp8sm|upstream|pr3213] [--check I1,...]
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

#include "explorer/alphabet.hpp"
#include "explorer/model_state.hpp"
#include "spec/invariants.hpp"
#include "spec/semantics.hpp"

namespace {

// Calls of operator new since start; the benchmark is single-threaded.
unsigned long long g_allocations = 0;

}  // namespace

// The replacements pair malloc with free themselves; GCC, seeing `operator delete` free what
// `operator new` returned, would warn of a mismatch that is not one.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
void* operator new(std::size_t size) {
  ++g_allocations;
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t size) { return operator new(size); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

namespace {

using fp8sm::explorer::ModelState;

struct Part {
  const char* name;
  unsigned long long allocations = 0;
  unsigned long long most = 0;  // in one successor
  void add(unsigned long long n) {
    allocations += n;
    most = std::max(most, n);
  }
};

struct Counts {
  unsigned long long successors = 0;
  Part copy{"copy the parent"}, apply{"execute the statement"}, encode{"encode for the fingerprint"},
      end{"judge the program's end"};
};

// The states a level of the walk assigns its successors into. Like the search's workers, which
// keep theirs for the whole search, a level keeps them across parents: storage grown by one
// successor serves the next ones.
struct Level {
  explicit Level(const ModelState& root) : state(root), last(root) {}
  ModelState state;
  ModelState last;
};

// Every successor of `parent` and, while `remaining` allows, theirs (depth first: memory stays
// one path of states), each part counted as the search runs it. `levels` holds the recycled
// states of this level and the ones below.
void visit(const ModelState& parent, int remaining, Counts& counts, std::vector<Level>& levels, std::size_t level) {
  if (remaining == 0) return;
  std::vector<fp8sm::spec::Statement> alphabet;
  fp8sm::explorer::next_statements(parent, fp8sm::explorer::AlphabetOptions{}, alphabet);
  thread_local std::string bytes;
  ModelState& state = levels[level].state;
  ModelState& last = levels[level].last;
  for (const fp8sm::spec::Statement& s : alphabet) {
    ++counts.successors;
    unsigned long long before = g_allocations;
    state = parent;
    counts.copy.add(g_allocations - before);
    before = g_allocations;
    state.apply(s);
    counts.apply.add(g_allocations - before);
    before = g_allocations;
    bytes.clear();
    state.encode(bytes);
    counts.encode.add(g_allocations - before);
    if (state.open_blocks().empty()) {
      last = state;  // the search judges the end on the chain's last state itself
      before = g_allocations;
      (void)last.end_here_and_discard();
      counts.end.add(g_allocations - before);
    }
    visit(state, remaining - 1, counts, levels, level + 1);
  }
}

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
    std::fprintf(stderr, "successor_allocations: unknown semantics '%s'\n", semantics.c_str());
    return 2;
  }
  fp8sm::spec::InvariantSet check_set;
  for (std::size_t at = 0; at < checks.size();) {
    const std::size_t comma = std::min(checks.find(',', at), checks.size());
    const auto invariant = fp8sm::spec::parse_invariant(checks.substr(at, comma - at));
    if (!invariant) {
      std::fprintf(stderr, "successor_allocations: --check: unknown invariant '%s'\n",
                   checks.substr(at, comma - at).c_str());
      return 2;
    }
    check_set.add(*invariant);
    at = comma + 1;
  }

  Counts counts;
  const ModelState root(*parsed_semantics, check_set);
  std::vector<Level> levels(static_cast<std::size_t>(depth), Level(root));
  visit(root, depth, counts, levels, 0);
  std::printf("%s, depth %d, %s: %llu successors\n", semantics.c_str(), depth,
              checks.empty() ? "all invariants" : checks.c_str(), counts.successors);
  for (const Part* part : {&counts.copy, &counts.apply, &counts.encode, &counts.end}) {
    std::printf("  %-28s %8.1f allocations per successor (at most %llu)\n", part->name,
                static_cast<double>(part->allocations) / static_cast<double>(counts.successors), part->most);
  }
  return 0;
}
