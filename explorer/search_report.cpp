#include "explorer/search_report.hpp"

#include <cstdio>
#include <sstream>
#include <string>

#include "explorer/report.hpp"
#include "spec/scenario_parser.hpp"

namespace fp8sm::explorer {

namespace {

std::string fixed(double value, int decimals) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
  return buffer;
}

std::string scientific(double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.1e", value);
  return buffer;
}

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
  }
  return "none";
}

double rate(const SearchResult& r) { return r.seconds > 0 ? static_cast<double>(r.distinct) / r.seconds : 0.0; }

}  // namespace

void print_search_text(std::ostream& out, const SearchOptions& options, const SearchResult& result) {
  out << "explorer: semantics " << spec::name(options.semantics) << ", depth " << options.depth << ", "
      << options.alphabet.modules << " modules, " << options.alphabet.tapes << " tape"
      << (options.alphabet.tapes == 1 ? "" : "s") << ", symmetry " << (options.alphabet.symmetry ? "on" : "off")
      << ", canonical ids " << (options.canonical_ids ? "on" : "off")
      << "\n";
  out << "a state carries:";
  for (std::size_t i = 0; i < result.carried.size(); ++i) out << (i ? "; " : " ") << result.carried[i];
  out << "\n";
  out << "depth  frontier  distinct  transitions\n";
  for (const LayerStats& l : result.layers) {
    out << l.depth << "  " << l.frontier << "  " << l.distinct << "  " << l.transitions << "\n";
  }
  if (!result.complete) {
    out << "stopped at the " << (result.stop_reason == StopReason::MaxMemory ? "memory budget (--max-memory)" : "state budget (--max-states)")
        << " while expanding depth " << result.depth_completed
        << ": complete to depth " << result.depth_completed << " only; the verdicts below are for what was explored\n";
  }
  for (const Counterexample& c : result.counterexamples) {
    out << spec::id(c.invariant) << " violated (" << result.violating_states.at(c.invariant)
        << " states); shortest counterexample, " << c.length << " statements: " << c.reason << "\n";
    out << indent(spec::print_scenario(c.program), "    ");
  }
  spec::InvariantSet holding;
  for (spec::Invariant i : spec::kAllInvariants) {
    if (result.violating_states.count(i) == 0 && (options.checks.empty() || options.checks.contains(i))) holding.add(i);
  }
  // An incomplete search proves nothing for the states it did not reach.
  out << (result.complete ? "holding: " : "not violated in what was explored (incomplete search): ")
      << holding.to_string() << "\n";
  out << "total: " << result.distinct << " distinct states, " << result.transitions << " transitions, "
      << fixed(result.seconds, 2) << " s, " << fixed(rate(result), 0) << " states/s, peak memory "
      << fixed(static_cast<double>(result.peak_memory_bytes) / (1024.0 * 1024.0), 1)
      << " MiB, fingerprint collision probability " << scientific(result.collision_probability) << "\n";
  out << "stored: " << fixed(bytes_per_state(result), 1)
      << " bytes per state (fingerprint table and search tree, frontier aside)\n";
}

void print_search_json(std::ostream& out, const SearchOptions& options, const SearchResult& result) {
  out << "{\"semantics\": " << json_string(std::string(spec::name(options.semantics)))
      << ", \"depth\": " << options.depth << ", \"modules\": " << options.alphabet.modules
      << ", \"tapes\": " << options.alphabet.tapes << ", \"symmetry\": " << (options.alphabet.symmetry ? "true" : "false")
      << ", \"canonical_ids\": " << (options.canonical_ids ? "true" : "false") << ", \"carried\": [";
  for (std::size_t i = 0; i < result.carried.size(); ++i) out << (i ? ", " : "") << json_string(result.carried[i]);
  out << "], \"complete\": " << (result.complete ? "true" : "false") << ", \"stopped_by\": \""
      << stop_name(result.stop_reason) << "\", \"layers\": [";
  for (std::size_t i = 0; i < result.layers.size(); ++i) {
    const LayerStats& l = result.layers[i];
    out << (i ? ", " : "") << "{\"depth\": " << l.depth << ", \"frontier\": " << l.frontier
        << ", \"distinct\": " << l.distinct << ", \"transitions\": " << l.transitions << "}";
  }
  out << "], \"violations\": [";
  for (std::size_t i = 0; i < result.counterexamples.size(); ++i) {
    const Counterexample& c = result.counterexamples[i];
    out << (i ? ", " : "") << "{\"invariant\": \"" << spec::id(c.invariant)
        << "\", \"states\": " << result.violating_states.at(c.invariant) << ", \"length\": " << c.length
        << ", \"reason\": " << json_string(c.reason)
        << ", \"counterexample\": " << json_string(spec::print_scenario_one_line(c.program)) << "}";
  }
  out << "], \"distinct_states\": " << result.distinct << ", \"transitions\": " << result.transitions
      << ", \"seconds\": " << fixed(result.seconds, 3) << ", \"states_per_second\": " << fixed(rate(result), 0)
      << ", \"peak_memory_bytes\": " << result.peak_memory_bytes << ", \"stored_bytes\": " << result.stored_bytes
      << ", \"stored_bytes_per_state\": " << fixed(bytes_per_state(result), 1)
      << ", \"collision_probability\": " << scientific(result.collision_probability) << "}\n";
}

}  // namespace fp8sm::explorer
