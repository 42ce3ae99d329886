#include "explorer/report/search_report.hpp"

#include <fmt/format.h>

#include <cmath>
#include <iterator>
#include <sstream>
#include <string>

#include "explorer/report/coverage_report.hpp"
#include "explorer/report/report.hpp"
#include "spec/scenario_parser.hpp"

namespace fp8sm::explorer {

namespace {

std::string indent(const std::string& text, const std::string& prefix) {
  std::string out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out += prefix + line + "\n";
  return out;
}

double bytes_per_state(const SearchResult& r) {
  return r.distinct > 0 ? static_cast<double>(r.stored_bytes) / static_cast<double>(r.distinct) : 0.0;
}

const char* stop_name(StopReason reason) {
  switch (reason) {
    case StopReason::None: return "none";
    case StopReason::MaxStates: return "max-states";
    case StopReason::MaxMemory: return "max-memory";
    case StopReason::Interrupted: return "interrupted";
    case StopReason::NoFixpoint: return "no-fixpoint";
  }
  return "none";
}

// Why an incomplete search stopped, as its report says it.
const char* stop_text(StopReason reason) {
  switch (reason) {
    case StopReason::MaxStates: return "stopped at the state budget (--max-states)";
    case StopReason::MaxMemory: return "stopped at the memory budget (--max-memory)";
    case StopReason::Interrupted: return "interrupted (SIGINT or SIGTERM)";
    case StopReason::NoFixpoint: return "found no fixpoint (--until-fixpoint)";
    case StopReason::None: break;
  }
  return "stopped";
}

double rate(const SearchResult& r) { return r.seconds > 0 ? static_cast<double>(r.distinct) / r.seconds : 0.0; }

// `value` rounded to `decimals` places: the JSON document's figures carry no false precision.
double rounded(double value, int decimals) {
  const double scale = std::pow(10.0, decimals);
  return std::round(value * scale) / scale;
}

// The invariants checked and not violated in what was explored.
spec::InvariantSet holding(const SearchOptions& options, const SearchResult& result) {
  const spec::InvariantSet checked = options.checked();
  spec::InvariantSet set;
  for (spec::Invariant i : spec::kAllInvariants) {
    if (result.violating_states.count(i) == 0 && checked.contains(i)) set.add(i);
  }
  return set;
}

Json invariant_ids(const spec::InvariantSet& set) {
  Json ids = Json::array();
  for (spec::Invariant i : spec::kAllInvariants) {
    if (set.contains(i)) ids.push_back(std::string(spec::id(i)));
  }
  return ids;
}

// "ranks: 1", or for a search over several processes each one's peak memory and what they
// sent each other.
std::string ranks_line(const SearchResult& result) {
  if (result.ranks <= 1) return "ranks: 1\n";
  std::string peaks;
  for (std::size_t r = 0; r < result.peak_memory_per_rank.size(); ++r) {
    peaks += fmt::format("{}{:.1f}", r == 0 ? "" : " ", static_cast<double>(result.peak_memory_per_rank[r]) / (1024.0 * 1024.0));
  }
  return fmt::format("ranks: {}, peak memory per rank {} MiB, {:.1f} MiB exchanged\n", result.ranks, peaks,
                     static_cast<double>(result.exchanged_bytes) / (1024.0 * 1024.0));
}

// "depth N", or for a search to the fixpoint where it gives up.
std::string extent_text(const SearchOptions& options) {
  if (!options.until_fixpoint) return fmt::format("depth {}", options.depth);
  return fmt::format("until the fixpoint (giving up past depth {})", options.depth);
}

// The programs' bounds (ResourceBounds), when the search has any.
std::string bounds_line(const SearchOptions& options) {
  const ResourceBounds& b = options.alphabet.bounds;
  if (!b.any()) return "";
  std::string text = "bounds: programs hold at most ";
  if (b.open_blocks != 0) text += fmt::format("{} open block{}", b.open_blocks, b.open_blocks == 1 ? "" : "s");
  if (b.open_blocks != 0 && b.live_nodes != 0) text += " and ";
  if (b.live_nodes != 0) {
    text += fmt::format("{} graph node{} (and as many statements in a checkpoint's body)", b.live_nodes,
                        b.live_nodes == 1 ? "" : "s");
  }
  return text + fmt::format(", over {} module{}\n", options.alphabet.modules, options.alphabet.modules == 1 ? "" : "s");
}

// The fixpoint, or the want of one, of a search to the fixpoint.
std::string fixpoint_line(const SearchOptions& options, const SearchResult& result) {
  if (!options.until_fixpoint) return "";
  if (result.fixpoint) {
    return fmt::format("fixpoint at depth {}: every program within the bounds, of any length, reaches one of these {} "
                       "states\n",
                       result.depth_completed - 1, result.distinct);
  }
  if (result.stop_reason != StopReason::NoFixpoint) return "";
  const std::uint64_t last = result.layers.empty() ? 0 : result.layers.back().frontier;
  std::string out = fmt::format("no fixpoint by depth {}: that layer still added {} states\n", result.depth_completed, last);
  if (!result.still_growing) return out;
  const SearchResult::StillGrowing& growing = *result.still_growing;
  out += fmt::format("what still grows: the parts of the state that took new values at depth {} of the same programs "
                     "({} states; bench/state_growth prints every part, layer by layer):\n",
                     growing.depth, growing.states);
  if (growing.parts.empty()) out += "    none: that depth's new states put together values each part had held before\n";
  for (std::size_t i = 0; i < growing.parts.size(); ++i) {
    out += fmt::format("    {}, as after: {}\n", growing.parts[i], growing.examples[i]);
  }
  return out;
}

}  // namespace

std::string search_text(const SearchOptions& options, const SearchResult& result) {
  std::string out;
  auto to = std::back_inserter(out);
  fmt::format_to(to, "explorer: semantics {}, {}, {} modules, {} tape{}, {}symmetry {}, canonical ids {}\n",
                 spec::name(options.semantics), extent_text(options), options.alphabet.modules, options.alphabet.tapes,
                 options.alphabet.tapes == 1 ? "" : "s", options.alphabet.data ? "data inputs, " : "",
                 options.alphabet.symmetry ? "on" : "off", options.canonical_ids ? "on" : "off");
  out += bounds_line(options);
  out += "a state carries:";
  for (std::size_t i = 0; i < result.carried.size(); ++i) fmt::format_to(to, "{}{}", i ? "; " : " ", result.carried[i]);
  out += "\ndepth  frontier  distinct  transitions\n";
  for (const LayerStats& l : result.layers) {
    fmt::format_to(to, "{}  {}  {}  {}\n", l.depth, l.frontier, l.distinct, l.transitions);
  }
  out += fixpoint_line(options, result);
  if (!result.complete && result.stop_reason != StopReason::NoFixpoint) {
    fmt::format_to(to,
                   "{} while expanding depth {}: complete to depth {} only; the verdicts below are for what was "
                   "explored\n",
                   stop_text(result.stop_reason), result.depth_completed + 1, result.depth_completed);
  }
  for (const Counterexample& c : result.counterexamples) {
    fmt::format_to(to, "{} violated ({} states); shortest counterexample, {} statements: {}\n", spec::id(c.invariant),
                   result.violating_states.at(c.invariant), c.length, with_module_names(c.reason, c.program));
    out += indent(spec::print_scenario(c.program), "    ");
  }
  // An incomplete search proves nothing for the states it did not reach.
  fmt::format_to(to, "{}{}\n", result.complete ? "holding: " : "not violated in what was explored (incomplete search): ",
                 holding(options, result).to_string());
  if (!result.row_transitions.empty()) out += coverage_text(options.semantics, result);
  fmt::format_to(to,
                 "total: {} distinct states, {} transitions, {:.2f} s, {:.0f} states/s, peak memory {:.1f} MiB, "
                 "fingerprint collision probability {:.1e}\n",
                 result.distinct, result.transitions, result.seconds, rate(result),
                 static_cast<double>(result.peak_memory_bytes) / (1024.0 * 1024.0), result.collision_probability);
  fmt::format_to(to, "stored: {:.1f} bytes per state (fingerprint tables, violation sets and frontiers)\n",
                 bytes_per_state(result));
  out += ranks_line(result);
  return out;
}

namespace {
std::string search_picture_note(const SearchOptions& options, const SearchResult& result) {
  if (result.complete) {
    if (!result.counterexamples.empty()) return "";
    if (result.fixpoint) {
      return fmt::format("no counterexample: every program within the bounds, of any length, holds {} under {}",
                         holding(options, result).to_string(), spec::name(options.semantics));
    }
    return fmt::format("no counterexample: every program of up to {} statements holds {} under {}", options.depth,
                       holding(options, result).to_string(), spec::name(options.semantics));
  }
  if (result.stop_reason == StopReason::NoFixpoint) {
    const std::string stop = fmt::format("no fixpoint by depth {}", result.depth_completed);
    if (result.counterexamples.empty()) return "no counterexample in what was explored: " + stop;
    return stop + ": the counterexamples below are those of what was explored";
  }
  const std::string stop = fmt::format("the search {} while expanding depth {}, complete to depth {}",
                                       stop_text(result.stop_reason), result.depth_completed + 1,
                                       result.depth_completed);
  if (result.counterexamples.empty()) return "no counterexample in what was explored: " + stop;
  return stop + ": the counterexamples below are those of what was explored";
}
}  // namespace

std::string search_picture(const SearchOptions& options, const SearchResult& result,
                           const std::function<std::string(const std::string&)>& comment,
                           const std::function<std::string(const RunSequence&)>& draw) {
  const std::string note = search_picture_note(options, result);
  std::string out = note.empty() ? "" : comment(note);
  for (std::size_t i = 0; i < result.counterexamples.size(); ++i) {
    const Counterexample& c = result.counterexamples[i];
    if (i > 0) out += "\n";
    out += comment(fmt::format("{}: {}", spec::id(c.invariant), with_module_names(c.reason, c.program)));
    out += draw(record_counterexample(c, options.semantics));
  }
  return out;
}

Json counterexample_json(spec::Semantics semantics, const Counterexample& c, std::uint64_t violating_states) {
  Json document = json_document(kCounterexampleFormat);
  document["semantics"] = std::string(spec::name(semantics));
  document["invariant"] = std::string(spec::id(c.invariant));
  document["states"] = violating_states;
  document["length"] = c.length;
  document["reason"] = with_module_names(c.reason, c.program);
  document["scenario"] = spec::print_scenario(c.program);
  document["scenario_one_line"] = spec::print_scenario_one_line(c.program);
  return document;
}

Json search_json(const SearchOptions& options, const SearchResult& result) {
  Json document = json_document(kSearchFormat);
  document["semantics"] = std::string(spec::name(options.semantics));
  document["depth"] = options.depth;
  document["modules"] = options.alphabet.modules;
  document["tapes"] = options.alphabet.tapes;
  document["symmetry"] = options.alphabet.symmetry;
  document["data_inputs"] = options.alphabet.data;
  document["canonical_ids"] = options.canonical_ids;
  document["checked"] = invariant_ids(options.checked());
  document["carried"] = result.carried;
  document["complete"] = result.complete;
  document["stopped_by"] = stop_name(result.stop_reason);
  document["depth_completed"] = result.depth_completed;
  const ResourceBounds& bounds = options.alphabet.bounds;
  document["bounds"] = {{"open_blocks", bounds.open_blocks}, {"live_nodes", bounds.live_nodes}};
  document["until_fixpoint"] = options.until_fixpoint;
  // The fixpoint's depth (the longest shortest path to a state), or null: none was reached.
  document["fixpoint_depth"] = result.fixpoint ? Json(result.depth_completed - 1) : Json(nullptr);
  // No fixpoint by the search's depth: what still grows (SearchResult::StillGrowing); else null.
  if (result.still_growing) {
    Json parts = Json::array();
    for (std::size_t i = 0; i < result.still_growing->parts.size(); ++i) {
      parts.push_back({{"part", result.still_growing->parts[i]}, {"example", result.still_growing->examples[i]}});
    }
    document["still_growing"] = {{"depth", result.still_growing->depth},
                                 {"states", result.still_growing->states},
                                 {"parts", parts}};
  } else {
    document["still_growing"] = nullptr;
  }
  Json layers = Json::array();
  for (const LayerStats& l : result.layers) {
    layers.push_back(
        {{"depth", l.depth}, {"frontier", l.frontier}, {"distinct", l.distinct}, {"transitions", l.transitions}});
  }
  document["layers"] = std::move(layers);
  Json violations = Json::array();
  for (const Counterexample& c : result.counterexamples) {
    violations.push_back(counterexample_json(options.semantics, c, result.violating_states.at(c.invariant)));
  }
  document["violations"] = std::move(violations);
  document["holding"] = invariant_ids(holding(options, result));
  if (!result.row_transitions.empty()) {
    document["coverage"] = coverage_json(options.semantics, result);
  }
  document["distinct_states"] = result.distinct;
  document["transitions"] = result.transitions;
  document["seconds"] = rounded(result.seconds, 3);
  document["states_per_second"] = static_cast<std::uint64_t>(std::llround(rate(result)));
  document["peak_memory_bytes"] = result.peak_memory_bytes;
  document["stored_bytes"] = result.stored_bytes;
  document["stored_bytes_per_state"] = rounded(bytes_per_state(result), 1);
  document["collision_probability"] = result.collision_probability;
  document["ranks"] = result.ranks;
  document["peak_memory_bytes_per_rank"] = result.peak_memory_per_rank;
  document["exchanged_bytes"] = result.exchanged_bytes;
  return document;
}

}  // namespace fp8sm::explorer
