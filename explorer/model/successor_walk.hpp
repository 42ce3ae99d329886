// Every successor the exhaustive search can try, one after the other, in the parts the search
// runs it in: copy the parent's carried parts into a recycled state, execute the statement,
// take the fingerprint, and (at top level) judge the program's end. Depth first over every
// program of up to `depth` statements, closing braces included, without merging equal states:
// what `visit` sees is per successor tried. For the benchmark and the test that count what a
// successor allocates (bench/successor_allocations.cpp, tests/explorer/test_flat_state.cpp).
#pragma once

#include <memory>
#include <vector>

#include "explorer/model/alphabet.hpp"
#include "explorer/model/model_state.hpp"

namespace fp8sm::explorer {

enum class SuccessorPart { Copy, Apply, Fingerprint, End };

// `around(part, run)` must call `run()` once: it can measure it.
template <class Around>
class SuccessorWalk {
 public:
  SuccessorWalk(ModelRunner& runner, int depth, Around around) : runner_(runner), around_(around) {
    levels_.resize(static_cast<std::size_t>(depth) * 2 + 2);
    for (auto& level : levels_) level = std::make_unique<Level>();
  }
  // Returns the number of successors tried.
  unsigned long long run(int depth) {
    auto root = std::make_unique<ModelState>();
    runner_.initial(*root);
    visit(*root, depth, 0);
    return successors_;
  }

 private:
  struct Level {
    ModelState state;
    ModelState last;
    std::vector<spec::Statement> alphabet;
  };

  void visit(const ModelState& parent, int remaining, std::size_t level) {
    Level& here = *levels_[level];
    here.alphabet.clear();
    if (remaining > 0) next_statements(parent.facts, AlphabetOptions{}, here.alphabet);
    if (!parent.facts.open.empty()) here.alphabet.push_back(close_statement());
    for (const spec::Statement& s : here.alphabet) {
      ++successors_;
      ModelState& state = here.state;
      around_(SuccessorPart::Copy, [&] { runner_.copy(state, parent); });
      around_(SuccessorPart::Apply, [&] { runner_.apply(state, s); });
      around_(SuccessorPart::Fingerprint, [&] { (void)runner_.fingerprint(state); });
      if (state.facts.open.empty()) {
        runner_.copy(here.last, state);  // the search judges the end on the chain's last state itself
        around_(SuccessorPart::End, [&] { runner_.end_here(here.last); });
      }
      visit(state, s.op == spec::Op::Close ? remaining : remaining - 1, level + 1);
    }
  }

  ModelRunner& runner_;
  Around around_;
  std::vector<std::unique_ptr<Level>> levels_;
  unsigned long long successors_ = 0;
};

}  // namespace fp8sm::explorer
