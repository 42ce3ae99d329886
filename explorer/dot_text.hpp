// Text inside Graphviz DOT documents (table_dot.cpp, sequence_dot.cpp).
#pragma once

#include <string>

namespace fp8sm::explorer {

// `text` as a DOT double-quoted string: quotes and backslashes escaped, a newline as a
// centred line break ("\n" in DOT).
inline std::string dot_quoted(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  out += '"';
  return out;
}

}  // namespace fp8sm::explorer
