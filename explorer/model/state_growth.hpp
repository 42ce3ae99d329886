// What still grows in a bounded search: the programs within resource bounds, breadth first as the
// explorer takes them (each statement with the closes after it, a chain past a bound dropped),
// and per part of the state (ModelRunner::canonical_parts: each field of the machine, the
// interpreter, the driver, each observer) how many distinct values the states stored so far
// hold, layer by layer. A part whose count still rises in the last layer is what keeps the
// search from its fixpoint; one that has stopped is finite already (docs/explorer.md
// "Fixpoint").
//
// It keeps every state's statements and replays them, and keeps every value of every part: it
// is meant for layers of up to a few hundred thousand states. explorer --until-fixpoint runs it
// within a state budget when its own search finds no fixpoint, to say what still grows;
// bench/state_growth prints the whole table.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "explorer/model/model_settings.hpp"

namespace fp8sm::explorer {

struct StateGrowthOptions {
  int depth = 8;  // layers at most
  // Stops after the first layer that leaves more states than this stored (0: no budget).
  std::size_t max_states = 0;
  // Keeps up to this many programs of the last layer that gave a part a new value, per part.
  int examples_per_part = 1;
  // Also counts, per part, how many of the states stored stay apart once that part is left out
  // of each: what forgetting it would merge among them (a hint of where an abstraction could
  // pay, not a proof that one is sound). Costs a hash per part and state, 8 bytes each.
  bool forgetting = false;
  // Also counts the states that stay apart once all of these parts (ModelRunner::part_names)
  // are left out of each at once: whether forgetting several together merges what none does
  // alone. Empty: not counted. A name that is no part is an error (std::invalid_argument).
  std::vector<std::string> forget_together;
};

struct StateGrowth {
  // Per layer analysed (1, 2, ...): the states stored once it was added, and per part the
  // distinct values those states hold.
  std::vector<std::size_t> states;
  std::map<std::string, std::vector<std::size_t>> part_values;
  // With StateGrowthOptions::forgetting, per layer and part: the states stored so far that
  // differ elsewhere than in that part.
  std::map<std::string, std::vector<std::size_t>> distinct_without;
  // With StateGrowthOptions::forget_together, per layer: the states stored so far that differ
  // elsewhere than in those parts.
  std::vector<std::size_t> distinct_without_together;
  bool fixpoint = false;  // the last layer analysed added no state
  // Per part that took a new value in the last layer: a program that gave it one, one line, and
  // that value's bytes in hex.
  struct Example {
    std::string program;
    std::string value_hex;
  };
  std::map<std::string, std::vector<Example>> examples;

  int layers() const { return static_cast<int>(states.size()); }
  // The parts whose count rose in the last layer analysed (none when it was a fixpoint), by name.
  std::vector<std::string> still_growing() const;
};

// The breadth-first analysis of the programs of `settings` within its alphabet's bounds (which
// must be set: without them nothing is finite). Throws statemachine::CapacityError, naming the
// program, if one outgrows the flat state, and std::invalid_argument for a forget_together name
// that is no part.
StateGrowth measure_state_growth(const ModelSettings& settings, const StateGrowthOptions& options);

}  // namespace fp8sm::explorer
