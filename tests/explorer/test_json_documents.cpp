// Every JSON document the explorer prints, parsed back and checked against its description in
// docs/json.md: the tables there are read as the schema (every field listed, none missing
// unless optional, each of the listed type), so the page and the program cannot drift apart.
// Beyond the schema, the documents must say what the run said: a counterexample's scenario
// replays to the same violation, a catalogue run equals `explorer run` of the same entry.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "run_command.hpp"
#include "spec/catalogue.hpp"

namespace {

using Json = nlohmann::ordered_json;  // keeps the members in the order printed
using fp8sm::test_support::CommandResult;

CommandResult explorer(const std::string& args) {
  return fp8sm::test_support::run_command(std::string(FP8SM_EXPLORER) + " " + args);
}

// The schema of docs/json.md: per document or object name, its fields in order.
struct Field {
  std::string name;
  std::string type;
  bool optional = false;
};
using Schema = std::map<std::string, std::vector<Field>>;

Schema read_schema() {
  std::ifstream in(std::string(FP8SM_SOURCE_DIR) + "/docs/json.md");
  EXPECT_TRUE(in.good()) << "docs/json.md is missing";
  const std::regex heading("^#{2,3} `([^`]+)`\\s*$");
  const std::regex row("^\\| `([a-z_]+)` \\| ([^|]+?) \\| .*\\|\\s*$");
  Schema schema;
  std::string current;
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_match(line, m, heading)) {
      current = m[1];
      schema[current];
    } else if (line.rfind("## ", 0) == 0) {
      current.clear();
    } else if (!current.empty() && std::regex_match(line, m, row)) {
      Field f{m[1], m[2], false};
      const std::string suffix = " optional";
      if (f.type.size() > suffix.size() && f.type.compare(f.type.size() - suffix.size(), suffix.size(), suffix) == 0) {
        f.type.erase(f.type.size() - suffix.size());
        f.optional = true;
      }
      schema[current].push_back(f);
    }
  }
  return schema;
}

const Schema& schema() {
  static const Schema s = read_schema();
  return s;
}

// Problems of `value` as a `type` of docs/json.md, each with its path; empty if it conforms.
void check_value(const Json& value, const std::string& type, const std::string& path, std::vector<std::string>& out);

void check_object(const Json& value, const std::string& name, const std::string& path, std::vector<std::string>& out) {
  const auto it = schema().find(name);
  if (it == schema().end()) {
    out.push_back(path + ": docs/json.md describes no '" + name + "'");
    return;
  }
  if (!value.is_object()) {
    out.push_back(path + ": not an object (" + name + ")");
    return;
  }
  // The members in the documented order, none undocumented, none missing unless optional.
  std::size_t next = 0;
  for (auto member = value.begin(); member != value.end(); ++member) {
    std::size_t at = next;
    while (at < it->second.size() && it->second[at].name != member.key()) ++at;
    if (at == it->second.size()) {
      out.push_back(path + "." + member.key() + ": not in docs/json.md's " + name + " (or out of order)");
      continue;
    }
    for (std::size_t skipped = next; skipped < at; ++skipped) {
      if (!it->second[skipped].optional) out.push_back(path + ": missing " + it->second[skipped].name);
    }
    check_value(member.value(), it->second[at].type, path + "." + member.key(), out);
    next = at + 1;
  }
  for (; next < it->second.size(); ++next) {
    if (!it->second[next].optional) out.push_back(path + ": missing " + it->second[next].name);
  }
  // A document's format names it.
  if (name.rfind("fp8sm-", 0) == 0 && value.value("format", "") != name) {
    out.push_back(path + ".format: '" + value.value("format", "") + "', expected '" + name + "'");
  }
}

void check_value(const Json& value, const std::string& type, const std::string& path, std::vector<std::string>& out) {
  const auto starts = [&](const std::string& prefix) { return type.rfind(prefix, 0) == 0; };
  if (starts("null or ")) {
    if (!value.is_null()) check_value(value, type.substr(8), path, out);
  } else if (starts("array of ")) {
    if (!value.is_array()) {
      out.push_back(path + ": not an array");
      return;
    }
    for (std::size_t i = 0; i < value.size(); ++i) {
      check_value(value[i], type.substr(9), path + "[" + std::to_string(i) + "]", out);
    }
  } else if (starts("map of ")) {
    if (!value.is_object()) {
      out.push_back(path + ": not an object (map)");
      return;
    }
    for (auto member = value.begin(); member != value.end(); ++member) {
      check_value(member.value(), type.substr(7), path + "." + member.key(), out);
    }
  } else if (type == "string") {
    if (!value.is_string()) out.push_back(path + ": not a string");
  } else if (type == "integer") {
    if (!value.is_number_integer()) out.push_back(path + ": not an integer");
  } else if (type == "number") {
    if (!value.is_number()) out.push_back(path + ": not a number");
  } else if (type == "boolean") {
    if (!value.is_boolean()) out.push_back(path + ": not a boolean");
  } else {
    check_object(value, type, path, out);
  }
}

// Parses `text` as exactly one document on one line and checks it as `format`.
Json parse_document(const std::string& text, const std::string& format) {
  EXPECT_FALSE(text.empty());
  EXPECT_EQ(text.find('\n'), text.size() - 1) << "not one line: " << text.substr(0, 200);
  const Json document = Json::parse(text);
  std::vector<std::string> problems;
  check_object(document, format, format, problems);
  std::string all;
  for (const std::string& p : problems) all += "\n  " + p;
  EXPECT_TRUE(problems.empty()) << "against docs/json.md:" << all;
  return document;
}

TEST(JsonSchema, DescribesEveryDocument) {
  for (const char* name : {"fp8sm-run/1", "fp8sm-search/1", "fp8sm-counterexample/1", "fp8sm-catalogue/1",
                           "fp8sm-program/1", "run step", "update counts", "raised exception", "layer", "coverage",
                           "coverage row", "catalogue entry"}) {
    ASSERT_EQ(schema().count(name), 1u) << name;
    EXPECT_FALSE(schema().at(name).empty()) << name;
  }
}

// The checker itself: a document with a field missing, one too many or one of the wrong type
// is refused.
TEST(JsonSchema, RefusesWhatTheDescriptionDoesNot) {
  const Json good = {{"forward_updates", 1}, {"backward_updates", 2}};
  std::vector<std::string> problems;
  check_object(good, "update counts", "x", problems);
  EXPECT_TRUE(problems.empty());
  problems.clear();
  check_object(Json{{"forward_updates", 1}}, "update counts", "x", problems);
  EXPECT_EQ(problems.size(), 1u);
  problems.clear();
  check_object(Json{{"forward_updates", 1}, {"backward_updates", 2}, {"extra", 3}}, "update counts", "x", problems);
  EXPECT_EQ(problems.size(), 1u);
  problems.clear();
  check_object(Json{{"forward_updates", "1"}, {"backward_updates", 2}}, "update counts", "x", problems);
  EXPECT_EQ(problems.size(), 1u);
  problems.clear();
  check_object(Json{{"backward_updates", 2}, {"forward_updates", 1}}, "update counts", "x", problems);
  EXPECT_FALSE(problems.empty());  // out of order
}

TEST(JsonDocuments, RunOfACatalogueEntry) {
  const CommandResult r = explorer("run reentrant-single-3-layers --semantics upstream --json");
  EXPECT_EQ(r.status, 1);
  const Json d = parse_document(r.out, "fp8sm-run/1");
  EXPECT_EQ(d["semantics"], "upstream");
  ASSERT_EQ(d["steps"].size(), 1u);
  // The seed's numbers (../seed discussion: forward 2, backward 3 on upstream).
  EXPECT_EQ(d["steps"][0]["forward_updates"], 2);
  EXPECT_EQ(d["steps"][0]["backward_updates"], 3);
  EXPECT_EQ(d["steps"][0]["violations"], Json::array({"I1", "I2", "I3", "I6", "I8"}));
  for (const auto& id : d["steps"][0]["violations"]) EXPECT_TRUE(d["steps"][0]["reasons"].contains(id)) << id;
  EXPECT_EQ(d["steps"][0]["reasons"].size(), d["steps"][0]["violations"].size());
}

TEST(JsonDocuments, RunOfTheStandardInputEqualsTheFile) {
  const std::string path = std::string(FP8SM_SOURCE_DIR) + "/tests/scenarios/edge-recompute-takes-another-path.scn";
  const CommandResult file = explorer("run " + path + " --semantics pr3213 --json");
  const CommandResult piped = explorer("run - --semantics pr3213 --json < " + path);
  const Json a = parse_document(file.out, "fp8sm-run/1");
  const Json b = parse_document(piped.out, "fp8sm-run/1");
  EXPECT_EQ(b["scenario"], "standard input");
  EXPECT_EQ(a["steps"], b["steps"]);
  EXPECT_EQ(file.status, piped.status);
}

TEST(JsonDocuments, RaisedExceptionsAndModuleNames) {
  const CommandResult r =
      explorer("run - --semantics upstream --json <<'EOF'\nautocast on { linear Attn; raise always }\nEOF");
  const Json d = parse_document(r.out, "fp8sm-run/1");
  ASSERT_EQ(d["steps"][0]["raised"].size(), 1u);
  EXPECT_EQ(d["steps"][0]["raised"][0]["kind"], "UserError");
  EXPECT_EQ(d["steps"][0]["raised"][0]["message"], "raised by 'raise always'");
}

// Every counterexample of a search is a document that replays: its scenario, run under its
// semantics, violates its invariant.
TEST(JsonDocuments, SearchAndItsCounterexamples) {
  const CommandResult r = explorer("--depth 3 --semantics upstream --json");
  EXPECT_EQ(r.status, 1);
  const Json d = parse_document(r.out, "fp8sm-search/1");
  EXPECT_EQ(d["depth"], 3);
  EXPECT_TRUE(d["complete"].get<bool>());
  EXPECT_FALSE(d.contains("coverage"));
  ASSERT_FALSE(d["violations"].empty());
  std::uint64_t transitions = 0;
  for (const auto& layer : d["layers"]) transitions += layer["transitions"].get<std::uint64_t>();
  EXPECT_EQ(d["transitions"].get<std::uint64_t>(), transitions);
  EXPECT_EQ(d["layers"].back()["distinct"], d["distinct_states"]);
  for (const Json& c : d["violations"]) {
    EXPECT_EQ(c["semantics"], "upstream");
    EXPECT_LE(c["length"].get<int>(), 3);
    const std::string invariant = c["invariant"];
    EXPECT_EQ(std::count(d["holding"].begin(), d["holding"].end(), invariant), 0) << invariant;
    const CommandResult replay =
        explorer("run - --semantics upstream --json <<'EOF'\n" + c["scenario"].get<std::string>() + "EOF");
    const Json run = parse_document(replay.out, "fp8sm-run/1");
    bool violated = false;
    for (const Json& step : run["steps"]) {
      violated = violated || std::count(step["violations"].begin(), step["violations"].end(), invariant) > 0;
    }
    EXPECT_TRUE(violated) << invariant << " not violated by its counterexample:\n" << c["scenario"];
  }
}

TEST(JsonDocuments, SearchWithCoverage) {
  const CommandResult r = explorer("--depth 3 --semantics fp8sm --coverage --json");
  EXPECT_EQ(r.status, 0);
  const Json d = parse_document(r.out, "fp8sm-search/1");
  ASSERT_TRUE(d.contains("coverage"));
  const Json& c = d["coverage"];
  const CommandResult table = explorer("table");
  std::size_t rows = 0;
  for (char ch : table.out) rows += ch == '\n';
  ASSERT_EQ(c["rows"].size(), rows);
  std::size_t present = 0, fired = 0;
  for (const Json& row : c["rows"]) {
    present += row["present"].get<bool>();
    fired += row["transitions"].get<std::uint64_t>() > 0;
    EXPECT_EQ(row["shortest"].is_null(), row["transitions"] == 0) << row;
    EXPECT_LE(row["transitions"].get<std::uint64_t>(), d["transitions"].get<std::uint64_t>());
  }
  EXPECT_EQ(c["rows_present"], present);
  EXPECT_EQ(c["rows_fired"], fired);
  EXPECT_EQ(c["never_fired"].size() + c["absent"].size() + fired, rows);
}

TEST(JsonDocuments, IncompleteSearch) {
  const CommandResult r = explorer("--depth 4 --max-states 100 --json");
  EXPECT_EQ(r.status, 3);
  const Json d = parse_document(r.out, "fp8sm-search/1");
  EXPECT_FALSE(d["complete"].get<bool>());
  EXPECT_EQ(d["stopped_by"], "max-states");
  EXPECT_LT(d["depth_completed"].get<int>(), 4);
}

// A search's --programs --json prints one document per line, each an fp8sm-program/1, numbered
// from 1 in the order printed, with its program and the steps `explorer run` gives it
// (tests/explorer/test_program_list.cpp compares those with `explorer run --json` line by line).
TEST(JsonDocuments, ProgramList) {
  const CommandResult r = explorer("--depth 3 --semantics pr3213 --programs --json 2>/dev/null");
  EXPECT_EQ(r.status, 0);
  std::istringstream in(r.out);
  int index = 0;
  for (std::string line; std::getline(in, line);) {
    const Json d = parse_document(line + "\n", "fp8sm-program/1");
    EXPECT_EQ(d["index"], ++index);
    EXPECT_EQ(d["semantics"], "pr3213");
    EXPECT_LE(d["depth"].get<int>(), 3);
    EXPECT_FALSE(d["steps"].empty());
  }
  EXPECT_GT(index, 0);
}

// The catalogue document holds, per entry and semantics, the document `explorer run` prints.
TEST(JsonDocuments, Catalogue) {
  const CommandResult r = explorer("catalogue --json");
  EXPECT_EQ(r.status, 1);  // upstream violates invariants
  const Json d = parse_document(r.out, "fp8sm-catalogue/1");
  EXPECT_EQ(d["semantics"], Json::array({"upstream", "pr3213", "fp8sm"}));
  ASSERT_EQ(d["entries"].size(), fp8sm::spec::catalogue().size());
  const Json& entry = d["entries"][4];
  const CommandResult run = explorer("run " + entry["name"].get<std::string>() + " --semantics pr3213 --json");
  const Json alone = parse_document(run.out, "fp8sm-run/1");
  EXPECT_EQ(entry["runs"][1]["steps"], alone["steps"]);
  const CommandResult one = explorer("catalogue --semantics fp8sm --json");
  EXPECT_EQ(one.status, 0);
  const Json fp8sm_only = parse_document(one.out, "fp8sm-catalogue/1");
  for (const Json& e : fp8sm_only["entries"]) EXPECT_EQ(e["runs"].size(), 1u);
}

}  // namespace
