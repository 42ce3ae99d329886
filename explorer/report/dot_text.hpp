// Text inside Graphviz DOT documents (table_dot.cpp, sequence_dot.cpp).
#pragma once

#include <string>

#include "explorer/report/picture_text.hpp"

namespace fp8sm::explorer {

// `text` (picture_text.hpp: valid UTF-8, no control characters) as a DOT double-quoted string:
// quotes and backslashes escaped, so that none ends the string or starts one of DOT's escapes.
inline std::string dot_quoted(const std::string& text) {
  std::string out = "\"";
  for (char c : picture_text(text)) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  out += '"';
  return out;
}

// A `//` comment line of a DOT document, ending in a newline: picture_text has no newline to end
// it early.
inline std::string dot_comment(const std::string& text) { return "// " + picture_text(text) + "\n"; }

}  // namespace fp8sm::explorer
