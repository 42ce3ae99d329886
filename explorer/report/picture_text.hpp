// Text the pictures (DOT, Mermaid) print from outside the explorer, such as a scenario file's
// name in a run's title: any bytes. Before a format escapes what is special to it (dot_quoted,
// sequence_dot.cpp's HTML, mermaid_text), picture_text makes it text every reader takes, the
// way the JSON documents do (json_document.hpp's json_line): each invalid UTF-8 sequence becomes
// U+FFFD, exactly as there, and each control character is written as JSON escapes it (a newline
// as the two characters \n, U+0001 as \u0001), so no newline ends a `//` or `%%` comment and
// no byte makes dot refuse its input. Quotes and backslashes stay: each format escapes them.
#pragma once

#include <string>

#include "explorer/report/json_document.hpp"

namespace fp8sm::explorer {

inline std::string picture_text(const std::string& text) {
  // The JSON string literal, then its escapes of '"' and '\' undone: those are printable.
  const std::string literal = json_line(Json(text));  // "...", then a newline
  std::string out;
  for (std::size_t i = 1; i + 2 < literal.size(); ++i) {
    if (literal[i] == '\\' && (literal[i + 1] == '"' || literal[i + 1] == '\\')) ++i;
    else if (literal[i] == '\\') out += literal[i++];  // an escape it keeps: copy both characters
    out += literal[i];
  }
  return out;
}

}  // namespace fp8sm::explorer
