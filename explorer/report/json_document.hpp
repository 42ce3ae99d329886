// The explorer's JSON documents (docs/json.md). Each is a JSON object whose first member,
// "format", names its schema and version: "fp8sm-run/1", "fp8sm-search/1",
// "fp8sm-counterexample/1", "fp8sm-catalogue/1", "fp8sm-program/1". A tool checks it before reading further; a
// change that removes or retypes a field bumps the version, one that adds a field does not.
// Members keep the order they are written in (ordered_json), so a document reads top-down.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

namespace fp8sm::explorer {

using Json = nlohmann::ordered_json;

inline constexpr std::string_view kRunFormat = "fp8sm-run/1";
inline constexpr std::string_view kSearchFormat = "fp8sm-search/1";
inline constexpr std::string_view kCounterexampleFormat = "fp8sm-counterexample/1";
inline constexpr std::string_view kCatalogueFormat = "fp8sm-catalogue/1";
inline constexpr std::string_view kProgramFormat = "fp8sm-program/1";

// An object with its "format" member set, for the other members to follow.
inline Json json_document(std::string_view format) {
  Json document = Json::object();
  document["format"] = std::string(format);
  return document;
}

// One line, then a newline: what `--json` prints. Invalid UTF-8 in a string (a scenario
// file's comment may hold any bytes) is written as U+FFFD rather than refused.
inline std::string json_line(const Json& document) {
  return document.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

}  // namespace fp8sm::explorer
