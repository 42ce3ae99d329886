#include "explorer/report/sequence_dot.hpp"

#include <fmt/format.h>

#include <iterator>

#include "explorer/report/dot_text.hpp"
#include "explorer/report/picture_text.hpp"
#include "explorer/report/report.hpp"
#include "explorer/report/search_report.hpp"
#include "spec/invariants.hpp"
#include "spec/scenario_parser.hpp"

namespace fp8sm::explorer {

namespace {

// Text inside an HTML-like label (picture_text.hpp first: no control character, which XML
// refuses, and valid UTF-8).
std::string html(const std::string& text) {
  std::string out;
  for (char c : picture_text(text)) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

int column(Part part) { return static_cast<int>(part); }

// One table row: empty cells, then `cell` spanning columns first..last, then empty cells.
std::string row(int first, int last, const std::string& cell_attributes, const std::string& content) {
  std::string out = "    <TR>";
  for (int c = 0; c < first; ++c) out += "<TD></TD>";
  out += fmt::format("<TD COLSPAN=\"{}\" {}>{}</TD>", last - first + 1, cell_attributes, content);
  for (int c = last + 1; c < static_cast<int>(kAllParts.size()); ++c) out += "<TD></TD>";
  return out + "</TR>\n";
}

std::string item_row(const SequenceItem& item) {
  int first = column(item.from);
  int last = column(item.to);
  if (first > last) std::swap(first, last);
  if (item.message) {
    // An arrow: the cell's bottom border is its shaft, the arrowhead points at the receiver.
    const bool rightwards = column(item.from) <= column(item.to);
    const std::string text = rightwards ? fmt::format("{} ▶", html(item.text)) : fmt::format("◀ {}", html(item.text));
    return row(first, last, fmt::format("BORDER=\"1\" SIDES=\"B\" ALIGN=\"{}\"", rightwards ? "RIGHT" : "LEFT"), text);
  }
  const char* colour = item.note == NoteKind::Violation                                         ? "#ffd6d6"
                       : item.note == NoteKind::ForwardUpdate || item.note == NoteKind::BackwardUpdate ? "#d9f2d9"
                       : item.note == NoteKind::Statement                                            ? "#eeeeee"
                                                                                                     : "#fff6c8";
  return row(first, last, fmt::format("BORDER=\"1\" BGCOLOR=\"{}\"", colour), html(item.text));
}

}  // namespace

std::string run_sequence_dot(const RunSequence& run) {
  const int columns = static_cast<int>(kAllParts.size());
  const std::string title = fmt::format("{} under {}", run.title, spec::name(run.semantics));
  std::string out;
  auto to = std::back_inserter(out);
  out += dot_comment(title);
  fmt::format_to(to, "// A run as a sequence: a column per part of the model, a row per event (message) or note.\n");
  fmt::format_to(to, "digraph run {{\n");
  fmt::format_to(to, "  node [shape=plaintext, fontname=Helvetica, fontsize=10];\n");
  fmt::format_to(to, "  sequence [label=<\n");
  fmt::format_to(to, "  <TABLE BORDER=\"0\" CELLBORDER=\"0\" CELLSPACING=\"2\" CELLPADDING=\"3\">\n");
  fmt::format_to(to, "    <TR><TD COLSPAN=\"{}\"><B>{}</B></TD></TR>\n", columns, html(title));
  out += "    <TR>";
  for (Part p : kAllParts) {
    fmt::format_to(to, "<TD BORDER=\"1\" BGCOLOR=\"#dddddd\"><B>{}</B></TD>", html(part_title(p)));
  }
  out += "</TR>\n";
  for (std::size_t s = 0; s < run.steps.size(); ++s) {
    out += row(0, columns - 1, "BORDER=\"1\" BGCOLOR=\"#c8d8ff\" ALIGN=\"LEFT\"", fmt::format("<B>step {}</B>", s + 1));
    for (const SequenceItem& item : run.steps[s].items) out += item_row(item);
  }
  fmt::format_to(to, "  </TABLE>>];\n");
  fmt::format_to(to, "}}\n");
  return out;
}

std::string search_dot(const SearchOptions& options, const SearchResult& result) {
  return search_picture(options, result, dot_comment, run_sequence_dot);
}

}  // namespace fp8sm::explorer
