// The pictures (docs/pictures.md): `explorer table --dot`, `explorer run --mermaid | --dot` and
// the search's counterexamples drawn.
//
//  - the table's DOT is accepted by dot, has a cluster per region and exactly the rows a
//    semantics can take as edges, each inside its region; which rows those are is computed
//    here a second way (three-valued evaluation of the guard text) and checked against the
//    rows the catalogue and the corpus take under each semantics;
//  - every Mermaid diagram the explorer prints follows the sequenceDiagram grammar (a checker
//    below, after https://mermaid.js.org/syntax/sequenceDiagram.html), and says what the run
//    did: as many update notes per step as the run's counts, its violations, an event per
//    message;
//  - the SVGs committed in docs/img/ were made from the current table and counterexample.
//
// dot must be installed (scripts/setup.sh installs graphviz): without it these tests fail.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "coverage_helpers.hpp"
#include "explorer/model/scenario_run.hpp"
#include "explorer/report/mermaid.hpp"
#include "explorer/report/row_guards.hpp"
#include "explorer/report/table_dot.hpp"
#include "explorer/search/search.hpp"
#include "interpreter/interpreter.hpp"
#include "run_command.hpp"
#include "spec/catalogue.hpp"
#include "spec/invariants.hpp"
#include "spec/scenario_parser.hpp"
#include "statemachine/machine.hpp"
#include "temporary_directory.hpp"

namespace fp8sm {
namespace {

using test_support::CommandResult;
using test_support::TemporaryDirectory;

CommandResult explorer_out(const std::string& args) {
  return test_support::run_command(std::string(FP8SM_EXPLORER) + " " + args + " 2>/dev/null");
}
CommandResult explorer_all(const std::string& args) {
  return test_support::run_command(std::string(FP8SM_EXPLORER) + " " + args + " 2>&1");
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::stringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

bool dot_installed() { return test_support::run_command("command -v dot >/dev/null 2>&1").status == 0; }

// dot's verdict on a DOT document: its exit status, and the SVG.
CommandResult dot_svg(const std::string& dot_text, const std::string& name) {
  const TemporaryDirectory temporary;
  const std::string path = temporary.file(name);
  std::ofstream(path) << dot_text;
  return test_support::run_command("dot -Tsvg '" + path + "' 2>&1");
}

#define REQUIRE_DOT() \
  ASSERT_TRUE(dot_installed()) << "Graphviz's dot is not installed: run scripts/setup.sh (apt-get install graphviz)"

// ---- which rows a semantics can take, computed a second way -----------------------------------

// Kleene's three-valued logic over the guard's text: the semantics guards are known, every
// other guard unknown. A row can never fire when its guard is false whatever the unknowns.
enum class Tri { False, True, Unknown };

class TriEvaluator {
 public:
  TriEvaluator(const std::string& text, spec::Semantics s) : text_(text), s_(s) {}
  Tri run() {
    const Tri t = expr();
    EXPECT_EQ(at_, text_.size()) << text_;
    return t;
  }

 private:
  const std::string& text_;
  spec::Semantics s_;
  std::size_t at_ = 0;

  void spaces() {
    while (at_ < text_.size() && text_[at_] == ' ') ++at_;
  }
  Tri expr() {
    spaces();
    std::size_t begin = at_;
    while (at_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[at_])) || text_[at_] == '_')) ++at_;
    const std::string name = text_.substr(begin, at_ - begin);
    std::vector<Tri> args;
    spaces();
    if (at_ < text_.size() && text_[at_] == '<') {
      ++at_;
      for (;;) {
        args.push_back(expr());
        spaces();
        if (text_[at_] == ',') {
          ++at_;
          continue;
        }
        EXPECT_EQ(text_[at_], '>') << text_;
        ++at_;
        break;
      }
    }
    const auto all = [&](Tri v) { return std::all_of(args.begin(), args.end(), [&](Tri a) { return a == v; }); };
    const auto any = [&](Tri v) { return std::any_of(args.begin(), args.end(), [&](Tri a) { return a == v; }); };
    if (name == "none") return Tri::True;
    if (name == "Not_") return args[0] == Tri::Unknown ? Tri::Unknown : args[0] == Tri::True ? Tri::False : Tri::True;
    if (name == "And_") return any(Tri::False) ? Tri::False : all(Tri::True) ? Tri::True : Tri::Unknown;
    if (name == "Or_") return any(Tri::True) ? Tri::True : all(Tri::False) ? Tri::False : Tri::Unknown;
    // guards.hpp: FP8SM_SEMANTICS_GUARD(Upstream, semantics == Upstream) and its three siblings.
    const bool upstream = s_ == spec::Semantics::Upstream;
    if (name == "Upstream") return upstream ? Tri::True : Tri::False;
    if (name == "Pr3213") return s_ == spec::Semantics::Pr3213 ? Tri::True : Tri::False;
    if (name == "Fp8sm") return s_ == spec::Semantics::Fp8sm ? Tri::True : Tri::False;
    if (name == "Pr3213OrFp8sm") return upstream ? Tri::False : Tri::True;
    return Tri::Unknown;
  }
};

std::set<int> rows_present_under(std::optional<spec::Semantics> s) {
  std::set<int> present;
  const auto& rows = statemachine::Machine::rows().rows();
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (!s || TriEvaluator(rows[i].guard, *s).run() != Tri::False) present.insert(static_cast<int>(i));
  }
  return present;
}

// The rows the catalogue and the regression corpus take under `s`.
std::set<int> rows_taken_under(spec::Semantics s) {
  std::vector<std::uint64_t> counts;
  for (const test_support::NamedScenario& scenario : test_support::catalogue_and_corpus()) {
    test_support::add_coverage(scenario.program, s, counts);
  }
  std::set<int> taken;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    if (counts[i] > 0) taken.insert(static_cast<int>(i));
  }
  return taken;
}

// ---- the table's DOT ----------------------------------------------------------------------------

struct DotEdge {
  std::string cluster, source, target, label;
  int row = -1;
  bool dashed = false;
};
struct TableDot {
  std::vector<std::string> clusters;
  std::map<std::string, std::string> cluster_of_node;
  std::vector<DotEdge> edges;
};

// Reads the lines table_dot writes: "subgraph cluster_X {", "NODE;" or "NODE [...];" inside it,
// and "A -> B [id=\"rowN\", label=\"...\"...];".
TableDot parse_table_dot(const std::string& text) {
  TableDot dot;
  std::string cluster;
  const std::regex open(R"(^\s*subgraph (cluster_\w+) \{$)");
  const std::regex node(R"(^\s*(\w+)( \[[^\]]*\])?;$)");
  const std::regex edge(R"re(^\s*(\w+) -> (\w+) \[id="row(\d+)", label="([^"]*)"(, style=dashed)?\];$)re");
  for (const std::string& line : lines_of(text)) {
    std::smatch m;
    if (std::regex_match(line, m, open)) {
      cluster = m[1];
      dot.clusters.push_back(cluster);
    } else if (std::regex_match(line, m, edge)) {
      dot.edges.push_back(DotEdge{cluster, m[1], m[2], m[4], std::stoi(m[3]), m[5].matched});
    } else if (!cluster.empty() && std::regex_match(line, m, node)) {
      dot.cluster_of_node[m[1]] = cluster;
    } else if (line.find("->") != std::string::npos) {
      ADD_FAILURE() << "an edge line not as expected: " << line;
    } else if (std::regex_match(line, std::regex(R"(^\s*\}$)"))) {
      cluster.clear();
    }
  }
  return dot;
}

const std::vector<std::optional<spec::Semantics>>& every_table_choice() {
  static const std::vector<std::optional<spec::Semantics>> choices = {std::nullopt, spec::Semantics::Fp8sm,
                                                                      spec::Semantics::Upstream, spec::Semantics::Pr3213};
  return choices;
}
std::string semantics_args(std::optional<spec::Semantics> s) {
  return s ? " --semantics " + std::string(spec::name(*s)) : "";
}

TEST(TableDot, DotAcceptsItForEverySemanticsAndItsEdgesAreTheRowsThatCanFire) {
  REQUIRE_DOT();
  const auto& rows = statemachine::Machine::rows().rows();
  for (const auto& s : every_table_choice()) {
    SCOPED_TRACE("table --dot" + semantics_args(s));
    const CommandResult out = explorer_out("table --dot" + semantics_args(s));
    ASSERT_EQ(out.status, 0);
    const CommandResult svg = dot_svg(out.out, "table.dot");
    EXPECT_EQ(svg.status, 0) << svg.out;
    EXPECT_NE(svg.out.find("<svg"), std::string::npos);

    const TableDot dot = parse_table_dot(out.out);
    EXPECT_EQ(dot.clusters,
              (std::vector<std::string>{"cluster_ownership", "cluster_checkpoint", "cluster_autocast", "cluster_grad"}));
    const std::set<int> expected = rows_present_under(s);
    EXPECT_EQ(dot.edges.size(), expected.size());
    std::set<int> drawn;
    for (const DotEdge& e : dot.edges) {
      EXPECT_TRUE(drawn.insert(e.row).second) << "row " << e.row << " drawn twice";
      ASSERT_LT(e.row, static_cast<int>(rows.size()));
      const statemachine::RowDescription& row = rows[static_cast<std::size_t>(e.row)];
      // Each edge in its source's cluster, between states of that cluster.
      EXPECT_EQ(e.source, row.source);
      EXPECT_EQ(dot.cluster_of_node.at(e.source), e.cluster) << e.source;
      EXPECT_EQ(dot.cluster_of_node.at(e.target), e.cluster) << e.target;
      // A row with no target is a dashed loop; the others go where the row goes.
      if (row.target == "none") {
        EXPECT_EQ(e.target, row.source) << "row " << e.row;
        EXPECT_TRUE(e.dashed) << "row " << e.row;
      } else {
        EXPECT_EQ(e.target, row.target) << "row " << e.row;
        EXPECT_FALSE(e.dashed) << "row " << e.row;
      }
      // "Event [guard] / action": the event first, brackets only for a guard.
      EXPECT_EQ(e.label.rfind(row.event, 0), 0u) << e.label;
      if (row.guard == "none") {
        EXPECT_EQ(e.label.find('['), std::string::npos) << e.label;
      }
      if (!s) {
        EXPECT_EQ(e.label.find('[') != std::string::npos, row.guard != "none") << e.label;
      }
      EXPECT_NE(e.label.find(" / "), std::string::npos) << e.label;
    }
    EXPECT_EQ(drawn, expected);
  }
}

// Every row a scenario takes under a semantics is drawn for it: the picture leaves out no row
// that fires. And a row left out under every semantics would be dead: there is none.
TEST(TableDot, EveryRowTheScenariosTakeUnderASemanticsIsDrawnForIt) {
  std::set<int> drawn_somewhere;
  for (spec::Semantics s : spec::kAllSemantics) {
    SCOPED_TRACE(std::string(spec::name(s)));
    const TableDot dot = parse_table_dot(explorer_out("table --dot" + semantics_args(s)).out);
    std::set<int> drawn;
    for (const DotEdge& e : dot.edges) drawn.insert(e.row);
    for (int row : rows_taken_under(s)) EXPECT_EQ(drawn.count(row), 1u) << "row " << row << " taken, not drawn";
    drawn_somewhere.insert(drawn.begin(), drawn.end());
  }
  EXPECT_EQ(drawn_somewhere.size(), statemachine::Machine::rows().rows().size());
}

// The guard of the table's first row whose guard is `text`, as a formula.
explorer::GuardExpression table_guard(const std::string& text) {
  for (const statemachine::RowDescription& row : statemachine::Machine::rows().rows()) {
    if (row.guard == text) return explorer::GuardExpression(row.guard_tree);
  }
  ADD_FAILURE() << "no row guarded by " << text;
  return explorer::GuardExpression(statemachine::GuardTree{});
}

// Formulas the table does not write, over named guards that read more than the semantics.
statemachine::GuardTree named(const char* name) {
  statemachine::GuardTree tree;
  tree.kind = statemachine::GuardTree::Kind::Guard;
  tree.name = name;
  return tree;
}
statemachine::GuardTree combined(statemachine::GuardTree::Kind kind, std::vector<statemachine::GuardTree> operands) {
  statemachine::GuardTree tree;
  tree.kind = kind;
  tree.operands = std::move(operands);
  return tree;
}

// A guard read under a semantics: its semantics guards decided and folded away.
TEST(TableDot, GuardsReadUnderASemantics) {
  using explorer::GuardExpression;
  using Kind = statemachine::GuardTree::Kind;
  const auto under = [](const char* guard, spec::Semantics s) { return table_guard(guard).under(s).to_string(); };
  EXPECT_EQ(under("And_<Upstream, FifoEmpty>", spec::Semantics::Upstream), "FifoEmpty");
  EXPECT_EQ(under("And_<Upstream, FifoEmpty>", spec::Semantics::Pr3213), "false");
  EXPECT_EQ(under("Not_<And_<Upstream, BitAtAutocastEntry>>", spec::Semantics::Fp8sm), "true");
  EXPECT_EQ(under("Not_<And_<Upstream, BitAtAutocastEntry>>", spec::Semantics::Upstream), "!BitAtAutocastEntry");
  EXPECT_EQ(under("And_<AtDepthZero, Or_<Upstream, Not_<OpenedByRecompute>>>", spec::Semantics::Pr3213),
            "AtDepthZero && !OpenedByRecompute");
  EXPECT_EQ(under("And_<Pr3213OrFp8sm, FramePrevOutside>", spec::Semantics::Fp8sm), "FramePrevOutside");
  EXPECT_EQ(table_guard("none").to_string(), "true");
  const statemachine::GuardTree a = named("A"), b = named("B"), c = named("C"), d = named("D");
  EXPECT_EQ(GuardExpression(combined(Kind::And, {a, combined(Kind::Or, {b, combined(Kind::Not, {combined(Kind::And, {c, d})})})}))
                .to_string(),
            "A && (B || !(C && D))");
  // A guard that contradicts itself can never fire, whatever its semantics guards say.
  const statemachine::GuardTree exceptional = named("Exceptional");
  const statemachine::GuardTree not_exceptional = combined(Kind::Not, {exceptional});
  EXPECT_FALSE(GuardExpression(combined(Kind::And, {exceptional, not_exceptional})).satisfiable());
  EXPECT_TRUE(GuardExpression(combined(Kind::Or, {exceptional, not_exceptional})).satisfiable());
}

// Each row's guard formula (built from its type) is the guard its name spells, and its region
// is its source state's.
TEST(TableDot, RowCatalogueDescribesEachGuardAsItsNameReads) {
  using Kind = statemachine::GuardTree::Kind;
  std::function<std::string(const statemachine::GuardTree&)> spelled = [&](const statemachine::GuardTree& tree) {
    switch (tree.kind) {
      case Kind::None: return std::string("none");
      case Kind::Guard: return tree.name;
      case Kind::Not: return "Not_<" + spelled(tree.operands.at(0)) + ">";
      case Kind::And:
      case Kind::Or:
        return std::string(tree.kind == Kind::And ? "And_<" : "Or_<") + spelled(tree.operands.at(0)) + ", " +
               spelled(tree.operands.at(1)) + ">";
    }
    return std::string("?");
  };
  for (const statemachine::RowDescription& row : statemachine::Machine::rows().rows()) {
    EXPECT_EQ(spelled(row.guard_tree), row.guard) << row.to_string();
    const explorer::TableRegion* region = explorer::region_of_state(row.source);
    ASSERT_NE(region, nullptr) << row.to_string();
    EXPECT_EQ(region, &explorer::table_regions().at(static_cast<std::size_t>(row.region))) << row.to_string();
  }
}

// ---- Mermaid ---------------------------------------------------------------------------------

// The sequenceDiagram grammar the explorer's diagrams may use. Returns what is wrong, or "".
// One diagram: `%%` comments (not `%%{`, a directive), then `sequenceDiagram`, then
// `participant ID as TEXT`, `ID->>ID: TEXT`, `Note over ID[,ID]: TEXT`, `rect rgb(...)` /
// `end` blocks (balanced), comments. TEXT is not empty and has no `;` (ends a statement),
// `#` (starts an entity code) but in entity codes, and no `<` or `>` (HTML).
std::string mermaid_problem(const std::string& diagram) {
  static const std::set<std::string> keywords = {"end",  "rect", "loop", "alt", "else",        "opt",  "par",
                                                 "and",  "note", "over", "participant", "actor", "critical",
                                                 "break", "box", "autonumber", "activate", "deactivate"};
  const std::regex participant(R"(^participant ([A-Za-z][A-Za-z0-9_]*) as (.+)$)");
  const std::regex message(R"(^([A-Za-z][A-Za-z0-9_]*)->>([A-Za-z][A-Za-z0-9_]*): (.*)$)");
  const std::regex note(R"(^Note over ([A-Za-z][A-Za-z0-9_]*)(,([A-Za-z][A-Za-z0-9_]*))?: (.*)$)");
  const std::regex rect(R"(^rect rgba?\(\d{1,3}, \d{1,3}, \d{1,3}(, [0-9.]+)?\)$)");
  const std::regex entity(R"(#(\d+|[A-Za-z]+);)");
  auto text_problem = [&](const std::string& text) -> std::string {
    if (text.find_first_not_of(' ') == std::string::npos) return "empty text";
    const std::string bare = std::regex_replace(text, entity, "");
    for (char c : {';', '#', '<', '>'}) {
      if (bare.find(c) != std::string::npos) return std::string("unescaped '") + c + "' in: " + text;
    }
    return "";
  };
  std::set<std::string> declared;
  bool header = false, anything = false;
  int depth = 0;
  int n = 0;
  for (const std::string& raw : lines_of(diagram)) {
    ++n;
    const std::string where = "line " + std::to_string(n) + " '" + raw + "': ";
    const std::string line = raw.substr(std::min(raw.find_first_not_of(' '), raw.size()));
    std::smatch m;
    if (line.rfind("%%", 0) == 0) {
      if (line.rfind("%%{", 0) == 0) return where + "a directive, not a comment";
      continue;
    }
    if (line.empty()) return where + "an empty line inside a diagram";
    if (!header) {
      if (line != "sequenceDiagram") return where + "the diagram must start with sequenceDiagram";
      header = true;
      continue;
    }
    anything = true;
    if (std::regex_match(line, m, participant)) {
      if (keywords.count(m[1]) || !declared.insert(m[1]).second) return where + "a bad or repeated participant id";
      if (std::string p = text_problem(m[2]); !p.empty()) return where + p;
    } else if (std::regex_match(line, m, message)) {
      if (!declared.count(m[1]) || !declared.count(m[2])) return where + "an undeclared participant";
      if (std::string p = text_problem(m[3]); !p.empty()) return where + p;
    } else if (std::regex_match(line, m, note)) {
      if (!declared.count(m[1]) || (m[3].matched && !declared.count(m[3]))) return where + "an undeclared participant";
      if (std::string p = text_problem(m[4]); !p.empty()) return where + p;
    } else if (std::regex_match(line, rect)) {
      ++depth;
    } else if (line == "end") {
      if (--depth < 0) return where + "'end' without a block";
    } else {
      return where + "not a sequenceDiagram statement";
    }
  }
  if (!header) return "no sequenceDiagram header";
  if (!anything) return "an empty diagram";
  if (depth != 0) return std::to_string(depth) + " blocks left open";
  return "";
}

TEST(Mermaid, TheCheckerRefusesWhatBreaksADiagram) {
  const std::string head = "sequenceDiagram\nparticipant A as a\nparticipant B as b\n";
  EXPECT_EQ(mermaid_problem(head + "A->>B: hello\nNote over A,B: x #59; y\n"), "");
  EXPECT_NE(mermaid_problem(head + "A->>B: a; b\n"), "");
  EXPECT_NE(mermaid_problem(head + "A->>B: module #1\n"), "");
  EXPECT_NE(mermaid_problem(head + "A->>C: hello\n"), "");
  EXPECT_NE(mermaid_problem(head + "rect rgb(1, 2, 3)\nA->>B: x\n"), "");
  EXPECT_NE(mermaid_problem(head + "end\n"), "");
  EXPECT_NE(mermaid_problem("participant A as a\nsequenceDiagram\nA->>A: x\n"), "");
  EXPECT_NE(mermaid_problem(head + "Note over A: And_<X>\n"), "");
  EXPECT_EQ(explorer::mermaid_text("a;b #c <d>"), "a#59;b #35;c #lt;d#gt;");
}

// The items of each step's `rect` block, by kind.
struct DrawnStep {
  int forward_update_notes = 0;
  int backward_update_notes = 0;
  int messages = 0;
  std::set<std::string> violations;  // "I1", ...
};

std::vector<DrawnStep> drawn_steps(const std::string& diagram) {
  std::vector<DrawnStep> steps;
  const std::regex violation(R"(^Note over P,UR: (I\d) violated: )");
  int depth = 0;
  for (const std::string& raw : lines_of(diagram)) {
    const std::string line = raw.substr(std::min(raw.find_first_not_of(' '), raw.size()));
    std::smatch m;
    if (line.rfind("rect ", 0) == 0) {
      if (depth++ == 0) steps.emplace_back();
    } else if (line == "end") {
      --depth;
    } else if (depth > 0) {
      DrawnStep& step = steps.back();
      if (line.rfind("Note over UR: forward update", 0) == 0) ++step.forward_update_notes;
      if (line.rfind("Note over UR: backward update", 0) == 0) ++step.backward_update_notes;
      if (line.find("->>") != std::string::npos) ++step.messages;
      if (std::regex_search(line, m, violation)) step.violations.insert(m[1]);
    }
  }
  return steps;
}

// Counts the events the interpreter fires, per step.
class EventCounter : public statemachine::Observer {
 public:
  void step_begin(int) override { per_step.push_back(0); }
  void event_fired(const spec::AnyEvent&, const std::optional<spec::RaisedException>&) override { ++per_step.back(); }
  std::vector<int> per_step;
};

TEST(Mermaid, EveryCatalogueRunUnderEverySemanticsIsAValidDiagramOfWhatTheRunDid) {
  for (const spec::CatalogueEntry& entry : spec::catalogue()) {
    const spec::Program program = spec::parse_scenario(entry.text, entry.name);
    for (spec::Semantics s : spec::kAllSemantics) {
      SCOPED_TRACE(entry.name + " under " + std::string(spec::name(s)));
      const CommandResult out = explorer_out("run catalogue:" + entry.name + " --mermaid --semantics " +
                                             std::string(spec::name(s)));
      const explorer::ScenarioReport report = explorer::run_scenario(program, s);
      bool violated = false;
      for (const spec::StepResult& step : report.steps) violated = violated || !step.violations.empty();
      EXPECT_EQ(out.status, violated ? 1 : 0);
      EXPECT_EQ(mermaid_problem(out.out), "") << out.out;

      EventCounter events;
      interpreter::Interpreter interpreter(s, &events);
      interpreter.run(program);

      const std::vector<DrawnStep> steps = drawn_steps(out.out);
      ASSERT_EQ(steps.size(), report.steps.size());
      ASSERT_EQ(events.per_step.size(), report.steps.size());
      for (std::size_t k = 0; k < steps.size(); ++k) {
        EXPECT_EQ(steps[k].forward_update_notes, report.steps[k].forward_updates) << "step " << k + 1;
        EXPECT_EQ(steps[k].backward_update_notes, report.steps[k].backward_updates) << "step " << k + 1;
        EXPECT_EQ(steps[k].messages, events.per_step[k]) << "step " << k + 1;
        std::set<std::string> violations;
        for (spec::Invariant i : spec::kAllInvariants) {
          if (report.steps[k].violations.contains(i)) violations.insert(std::string(spec::id(i)));
        }
        EXPECT_EQ(steps[k].violations, violations) << "step " << k + 1;
      }
    }
  }
}

// The seed's numbers (PR #3213's discussion: "reentrant/single/3 layers fwd=2 bwd=3" on TE
// main): two forward-update notes and three backward-update notes in the one step.
TEST(Mermaid, TheSeedScenarioUnderUpstreamUpdatesTwiceForwardAndThreeTimesBackward) {
  const CommandResult out = explorer_out("run reentrant-single-3-layers --semantics upstream --mermaid");
  const std::vector<DrawnStep> steps = drawn_steps(out.out);
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0].forward_update_notes, 2);
  EXPECT_EQ(steps[0].backward_update_notes, 3);
  EXPECT_EQ(drawn_steps(explorer_out("run reentrant-single-3-layers --semantics fp8sm --mermaid").out)[0].forward_update_notes, 1);
}

// The rows a message names are rows of the table its semantics can take: the two pictures agree.
TEST(Mermaid, TheRowsOfEveryMessageAreDrawnInTheTableOfItsSemantics) {
  const std::regex rows_named(R"(· rows? ([\d, ]+)$)");
  for (spec::Semantics s : spec::kAllSemantics) {
    SCOPED_TRACE(std::string(spec::name(s)));
    const std::set<int> drawn = rows_present_under(s);
    int named = 0;
    for (const spec::CatalogueEntry& entry : spec::catalogue()) {
      const std::string diagram =
          explorer_out("run catalogue:" + entry.name + " --mermaid --semantics " + std::string(spec::name(s))).out;
      for (const std::string& line : lines_of(diagram)) {
        std::smatch m;
        if (line.find("->>") == std::string::npos || !std::regex_search(line, m, rows_named)) continue;
        std::stringstream list(m[1].str());
        for (std::string item; std::getline(list, item, ',');) {
          ++named;
          EXPECT_EQ(drawn.count(std::stoi(item)), 1u) << line;
        }
      }
    }
    EXPECT_GT(named, 100);
  }
}

// `--depth N --mermaid`: per counterexample a "%% I<k>: reason" line and its diagram, blank
// lines between; the same invariants, in the same order, as the search's report.
TEST(Mermaid, CounterexamplesOfASearchAreOneDiagramEach) {
  for (spec::Semantics s : {spec::Semantics::Upstream, spec::Semantics::Pr3213}) {
    SCOPED_TRACE(std::string(spec::name(s)));
    const CommandResult out = explorer_out("--depth 3 --mermaid --semantics " + std::string(spec::name(s)));
    EXPECT_EQ(out.status, 1);
    explorer::SearchOptions options;
    options.semantics = s;
    options.depth = 3;
    std::vector<std::string> reported;
    for (const explorer::Counterexample& c : explorer::search(options).counterexamples) {
      reported.push_back(std::string(spec::id(c.invariant)));
    }
    ASSERT_FALSE(reported.empty());

    std::vector<std::string> drawn;
    std::stringstream in(out.out);
    std::string diagram, line;
    auto finish = [&] {
      if (diagram.empty()) return;
      EXPECT_EQ(mermaid_problem(diagram), "") << diagram;
      const std::regex first(R"(^%% (I\d): .+)");
      std::smatch m;
      const std::string head = diagram.substr(0, diagram.find('\n'));
      EXPECT_TRUE(std::regex_match(head, m, first)) << head;
      drawn.push_back(m[1]);
      // The counterexample violates what it is drawn for.
      EXPECT_NE(diagram.find("Note over P,UR: " + m[1].str() + " violated"), std::string::npos) << diagram;
      diagram.clear();
    };
    while (std::getline(in, line)) {
      if (line.empty()) {
        finish();
      } else {
        diagram += line + "\n";
      }
    }
    finish();
    EXPECT_EQ(drawn, reported);
  }
}

// A search's picture is never empty: with no counterexample, or when the search stopped early,
// a comment line of the format says so (and why), as its report would; dot accepts the DOT.
TEST(SearchPictures, NoCounterexampleOrAnEarlyStopIsSaidInACommentLine) {
  REQUIRE_DOT();
  struct Case {
    std::string args;
    int status;
    std::string note;
  };
  const std::vector<Case> cases = {
      {"--depth 2 --semantics fp8sm", 0,
       "no counterexample: every program of up to 2 statements holds I1 I2 I3 I4 I5 I6 I7 I8 I9 under fp8sm"},
      {"--depth 3 --semantics pr3213 --check I3,I7", 0,
       "no counterexample: every program of up to 3 statements holds I3 I7 under pr3213"},
      {"--depth 8 --semantics fp8sm --max-states 100", 3,
       "no counterexample in what was explored: the search stopped at the state budget (--max-states) while "
       "expanding depth 2, complete to depth 1"},
      {"--depth 5 --semantics upstream --check I9 --max-memory 1M", 3,
       "no counterexample in what was explored: the search stopped at the memory budget (--max-memory) while "
       "expanding depth 4, complete to depth 3"},
      {"--depth 4 --semantics upstream --check I1 --max-states 2000", 1,
       "the search stopped at the state budget (--max-states) while expanding depth 3, complete to depth 2: the "
       "counterexamples below are those of what was explored"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.args);
    const CommandResult mermaid = explorer_out(c.args + " --mermaid");
    EXPECT_EQ(mermaid.status, c.status);
    EXPECT_EQ(lines_of(mermaid.out).at(0), "%% " + c.note) << mermaid.out;
    const CommandResult dot = explorer_out(c.args + " --dot");
    EXPECT_EQ(dot.status, c.status);
    EXPECT_EQ(lines_of(dot.out).at(0), "// " + c.note) << dot.out;
    const CommandResult svg = dot_svg(dot.out, "search.dot");
    EXPECT_EQ(svg.status, 0) << svg.out;
    if (c.status == 1) {
      EXPECT_EQ(mermaid_problem(mermaid.out.substr(mermaid.out.find('\n') + 1)), "") << mermaid.out;
      EXPECT_NE(svg.out.find("<svg"), std::string::npos);
    } else {
      EXPECT_EQ(lines_of(mermaid.out).size(), 1u) << mermaid.out;
      EXPECT_EQ(lines_of(dot.out).size(), 1u) << dot.out;
    }
  }
}

// The bytes of a scenario file's name reach the pictures as its title: a newline, bytes that
// are not UTF-8 (0xFF 0xFE), a control character, quotes, a backslash and what is special to
// HTML, DOT or Mermaid. The pictures print it as the JSON document writes it: the invalid bytes
// as U+FFFD, the newline and the control character as their JSON escapes (\n, \u0001), so the
// `//` and `%%` comments stay one line, dot accepts the DOT without a warning, and the Mermaid
// diagram follows the grammar.
bool valid_utf8(const std::string& text) {
  try {
    (void)nlohmann::json(text).dump();  // throws type_error 316 on invalid UTF-8
    return true;
  } catch (const nlohmann::json::type_error&) {
    return false;
  }
}

TEST(RunPictures, AFileNameOfAnyBytesIsPrintedAsTheJsonWritesIt) {
  REQUIRE_DOT();
  const TemporaryDirectory temporary;
  const std::string dir = temporary.string();
  const std::string name = "odd\nname\xff\xfe \"q\" back\\slash <b> & #1; %% \x01.scn";
  const std::string path = dir + "/" + name;
  std::ofstream(path) << "autocast on { linear L0 }\n";
  ::setenv("FP8SM_PICTURE_PATH", path.c_str(), 1);
  const std::string printed = dir + "/odd\\nname\xEF\xBF\xBD\xEF\xBF\xBD \"q\" back\\slash <b> & #1; %% \\u0001.scn";

  const CommandResult json = explorer_out("run \"$FP8SM_PICTURE_PATH\" --json");
  ASSERT_EQ(json.status, 0) << json.out;
  EXPECT_EQ(nlohmann::json::parse(json.out)["scenario"].get<std::string>(),
            dir + "/odd\nname\xEF\xBF\xBD\xEF\xBF\xBD \"q\" back\\slash <b> & #1; %% \x01.scn");

  const CommandResult dot = explorer_out("run \"$FP8SM_PICTURE_PATH\" --dot");
  EXPECT_EQ(dot.status, 0);
  EXPECT_TRUE(valid_utf8(dot.out)) << dot.out;
  EXPECT_EQ(lines_of(dot.out).at(0), "// " + printed + " under fp8sm") << dot.out;
  const CommandResult svg = dot_svg(dot.out, "odd-name.dot");
  EXPECT_EQ(svg.status, 0) << svg.out;
  EXPECT_EQ(svg.out.find("Warning"), std::string::npos) << svg.out;
  EXPECT_NE(svg.out.find("<svg"), std::string::npos) << svg.out;

  const CommandResult mermaid = explorer_out("run \"$FP8SM_PICTURE_PATH\" --mermaid");
  EXPECT_EQ(mermaid.status, 0);
  EXPECT_TRUE(valid_utf8(mermaid.out)) << mermaid.out;
  EXPECT_EQ(lines_of(mermaid.out).at(0), "%% " + printed + " under fp8sm") << mermaid.out;
  EXPECT_EQ(mermaid_problem(mermaid.out), "") << mermaid.out;

  ::unsetenv("FP8SM_PICTURE_PATH");
}

TEST(RunDot, DotAcceptsTheRunsAndTheCounterexamples) {
  REQUIRE_DOT();
  for (const char* args : {"run reentrant-single-3-layers --semantics upstream --dot",
                           "run recompute-entry-failure --semantics pr3213 --dot",
                           "--depth 2 --semantics upstream --check I1 --dot"}) {
    SCOPED_TRACE(args);
    const CommandResult out = explorer_out(args);
    // The exit status is the report's, whatever is printed.
    std::string report_args = args;
    report_args.erase(report_args.find(" --dot"));
    EXPECT_EQ(out.status, explorer_out(report_args).status);
    const CommandResult svg = dot_svg(out.out, "run.dot");
    EXPECT_EQ(svg.status, 0) << svg.out;
    EXPECT_NE(svg.out.find("<svg"), std::string::npos);
  }
}

TEST(PictureOptions, RefusedWhereTheyMeanNothing) {
  for (const char* args : {"run 5 --mermaid --json", "run 5 --dot --json", "run 5 --mermaid --dot",
                           "--depth 2 --mermaid --json", "--depth 2 --mermaid --coverage", "table --mermaid",
                           "table --semantics fp8sm", "table --dot --json", "list --dot", "catalogue --mermaid"}) {
    SCOPED_TRACE(args);
    const CommandResult out = explorer_all(args);
    EXPECT_EQ(out.status, 2) << out.out;
    EXPECT_NE(out.out.find("explorer: error: "), std::string::npos) << out.out;
  }
}

// ---- the committed pictures --------------------------------------------------------------------

std::string xml_escaped(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '&') out += "&amp;";
    else if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '"') out += "&quot;";
    else out += c;
  }
  return out;
}

// docs/img/table-fp8sm.svg is the current table under fp8sm: every row drawn now, with its
// label, and no other (scripts/make-pictures.sh makes it again).
TEST(CommittedPictures, TheTableSvgIsTheCurrentTable) {
  const std::string svg = read_file(FP8SM_SOURCE_DIR "/docs/img/table-fp8sm.svg");
  ASSERT_FALSE(svg.empty()) << "docs/img/table-fp8sm.svg is missing";
  const TableDot dot = parse_table_dot(explorer_out("table --dot --semantics fp8sm").out);
  std::set<int> drawn;
  for (const DotEdge& e : dot.edges) {
    drawn.insert(e.row);
    EXPECT_NE(svg.find("id=\"row" + std::to_string(e.row) + "\""), std::string::npos) << "row " << e.row;
    EXPECT_NE(svg.find(">" + xml_escaped(e.label) + "<"), std::string::npos) << e.label;
  }
  const std::regex id(R"re(id="row(\d+)")re");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), id); it != std::sregex_iterator(); ++it) {
    EXPECT_EQ(drawn.count(std::stoi((*it)[1])), 1u) << "the SVG draws row " << (*it)[1] << ", the table does not";
  }
}

// docs/img/counterexample-upstream-I1.svg draws the shortest upstream I1 counterexample of
// today's search, and docs/pictures.md shows its Mermaid source as the explorer prints it.
TEST(CommittedPictures, TheCounterexampleIsTheCurrentOne) {
  const std::string svg = read_file(FP8SM_SOURCE_DIR "/docs/img/counterexample-upstream-I1.svg");
  ASSERT_FALSE(svg.empty()) << "docs/img/counterexample-upstream-I1.svg is missing";
  // The shortest: the first depth whose search finds one (exit status 1), as
  // scripts/make-pictures.sh looks.
  std::string mermaid;
  for (int depth = 0; depth <= 8 && mermaid.empty(); ++depth) {
    const CommandResult r = explorer_out("--depth " + std::to_string(depth) + " --semantics upstream --check I1 --mermaid");
    if (r.status == 1) mermaid = r.out;
  }
  ASSERT_FALSE(mermaid.empty());
  const std::string title = lines_of(mermaid).at(1).substr(3);  // "%% shortest counterexample ..."
  EXPECT_NE(svg.find(xml_escaped(title)), std::string::npos) << title;
  const std::string page = read_file(FP8SM_SOURCE_DIR "/docs/pictures.md");
  EXPECT_NE(page.find("```mermaid\n" + mermaid + "```"), std::string::npos)
      << "docs/pictures.md's Mermaid source is not what the explorer prints now:\n" << mermaid;
}

}  // namespace
}  // namespace fp8sm
