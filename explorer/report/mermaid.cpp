#include "explorer/report/mermaid.hpp"

#include <fmt/format.h>

#include <iterator>

#include "explorer/report/picture_text.hpp"
#include "explorer/report/report.hpp"
#include "explorer/report/search_report.hpp"
#include "spec/invariants.hpp"
#include "spec/scenario_parser.hpp"

namespace fp8sm::explorer {

std::string mermaid_text(const std::string& text) {
  std::string out;
  for (char c : picture_text(text)) {
    switch (c) {
      case '#': out += "#35;"; break;  // starts an entity code
      case ';': out += "#59;"; break;  // ends a statement, like a newline
      case '<': out += "#lt;"; break;  // would open an HTML tag
      case '>': out += "#gt;"; break;
      default: out += c;
    }
  }
  return out;
}

namespace {

// A comment line: only the line's end ends it (picture_text leaves no newline in it), and the
// space after "%%" keeps it from opening a directive ("%%{").
std::string comment(const std::string& text) { return fmt::format("%% {}\n", picture_text(text)); }

std::string participants_over(Part from, Part to) {
  return from == to ? part_id(from) : fmt::format("{},{}", part_id(from), part_id(to));
}

}  // namespace

std::string run_mermaid(const RunSequence& run) {
  std::string out = comment(fmt::format("{} under {}", run.title, spec::name(run.semantics)));
  auto to = std::back_inserter(out);
  fmt::format_to(to, "sequenceDiagram\n");
  for (Part p : kAllParts) fmt::format_to(to, "    participant {} as {}\n", part_id(p), mermaid_text(part_title(p)));
  const std::string all = participants_over(kAllParts.front(), kAllParts.back());
  for (std::size_t s = 0; s < run.steps.size(); ++s) {
    // Two light backgrounds, alternating, so that neighbouring steps stand apart.
    fmt::format_to(to, "    rect {}\n", s % 2 == 0 ? "rgb(232, 240, 255)" : "rgb(240, 250, 232)");
    fmt::format_to(to, "    Note over {}: step {}\n", all, s + 1);
    for (const SequenceItem& item : run.steps[s].items) {
      if (item.message) {
        fmt::format_to(to, "    {}->>{}: {}\n", part_id(item.from), part_id(item.to), mermaid_text(item.text));
      } else {
        fmt::format_to(to, "    Note over {}: {}\n", participants_over(item.from, item.to), mermaid_text(item.text));
      }
    }
    fmt::format_to(to, "    end\n");
  }
  return out;
}

std::string search_mermaid(const SearchOptions& options, const SearchResult& result) {
  return search_picture(options, result, comment, run_mermaid);
}

}  // namespace fp8sm::explorer
