#include "explorer/search/program_model.hpp"

#include <fmt/core.h>
#include <xxhash.h>

#include "explorer/model/alphabet.hpp"
#include "explorer/model/model_state.hpp"
#include "explorer/model/resource_bounds.hpp"
#include "explorer/model/statement_code.hpp"
#include "statemachine/machine.hpp"

namespace fp8sm::explorer {

using spec::Statement;

namespace {

// One thread's runner (the interpreters and observers, bound to whichever state it executes) and
// flat states: the child extended from the parent, and the states along the path last rebuilt,
// one after each of its codes, the last of them the parent. A layer's parents come in key order,
// so the next parent most often shares a long prefix with the last one: rebuilding it replays
// only the codes past that prefix. (With only the parent's parent kept, a search to the fixpoint,
// whose layers do not grow twentyfold as a depth-bounded one's do, replayed nearly every parent
// from the root: 20 and more statements for each.) Nothing is allocated per successor.
class ProgramCursor : public ModelCursor {
 public:
  explicit ProgramCursor(const ModelSettings& settings)
      : settings_(settings),
        runner_(settings.semantics, settings.checks, settings.canonical_ids, settings.abstractions),
        root_(std::make_unique<ModelState>()),
        child_(std::make_unique<ModelState>()) {
    runner_.initial(*root_);
    parent_ = root_.get();
  }

  ModelStep initial() override {
    ModelStep step;
    step.fingerprint = runner_.fingerprint(*root_);
    step.top_level = true;
    runner_.copy(*child_, *root_);
    step.end_violations = runner_.end_here(*child_).violations();
    return step;
  }

  void stand_on(const SearchPath& path, std::vector<StatementCode>& next) override {
    rebuild(path);
    next_statements(parent_->facts, settings_.alphabet, statements_);
    next.clear();
    for (const Statement& s : statements_) next.push_back(pack_statement(s));
  }

  ModelStep step(StatementCode code, bool on_child, std::vector<std::uint16_t>* rows) override {
    ModelState& state = *child_;
    if (!on_child) runner_.copy(state, *parent_);
    // Rows are recorded here only: rebuilding a parent replays rows already counted.
    if (rows != nullptr) runner_.record_rows(rows);
    ModelStep step;
    step.violations = runner_.apply(state, unpack_statement(code)).violations();
    if (settings_.alphabet.bounds.any() && !within_bounds(state, settings_.alphabet.bounds)) {
      step.out_of_bounds = true;
      if (rows != nullptr) runner_.record_rows(nullptr);
      return step;
    }
    step.fingerprint = runner_.fingerprint(state);
    step.top_level = state.facts.open.empty();
    // A top-level state ends the chain, so the state is not needed after its end verdict.
    if (step.top_level) step.end_violations = runner_.end_here(state).violations();
    if (rows != nullptr) runner_.record_rows(nullptr);
    return step;
  }

  std::string reason(const SearchPath& path, bool at_end, spec::Invariant invariant) override {
    ModelState& state = *child_;
    runner_.copy(state, *root_);
    const std::vector<Statement> statements = path.statements();
    const std::size_t replayed = at_end ? statements.size() : statements.size() - 1;
    for (std::size_t s = 0; s < replayed; ++s) runner_.apply(state, statements[s]);
    const Verdict& verdict = at_end ? runner_.end_here(state) : runner_.apply(state, statements.back());
    return verdict.reason(invariant);
  }

  // The fingerprints of the root and its successors: part of the model's identity.
  std::vector<Fingerprint> first_fingerprints() {
    std::vector<StatementCode> next;
    stand_on(SearchPath{}, next);
    std::vector<Fingerprint> fingerprints = {runner_.fingerprint(*root_)};
    for (const Statement& s : statements_) {
      runner_.copy(*child_, *root_);
      runner_.apply(*child_, s);
      fingerprints.push_back(runner_.fingerprint(*child_));
    }
    return fingerprints;
  }

 private:
  // Stands parent_ on `path`'s state: the states of the codes it shares with the path built
  // last are kept; each code past them is run on a copy of the state before it.
  void rebuild(const SearchPath& path) {
    const int n = path.size();
    int shared = 0;
    while (shared < n && shared < built_codes_ && path[shared] == built_[shared]) ++shared;
    while (static_cast<int>(prefix_.size()) < n) prefix_.push_back(std::make_unique<ModelState>());
    // Counted code by code, so that a statement that throws leaves only valid states behind.
    built_ = path;
    built_codes_ = shared;
    for (int i = shared; i < n; ++i) {
      ModelState& next = *prefix_[static_cast<std::size_t>(i)];
      runner_.copy(next, i == 0 ? *root_ : *prefix_[static_cast<std::size_t>(i - 1)]);
      runner_.apply(next, unpack_statement(path[i]));
      built_codes_ = i + 1;
    }
    parent_ = n == 0 ? root_.get() : prefix_[static_cast<std::size_t>(n - 1)].get();
  }

  const ModelSettings& settings_;
  ModelRunner runner_;
  std::vector<Statement> statements_;  // those that may follow the parent
  std::unique_ptr<ModelState> root_;   // the empty program
  std::unique_ptr<ModelState> child_;
  // prefix_[i]: the state after the first i + 1 codes of built_ (its first built_codes_ valid).
  std::vector<std::unique_ptr<ModelState>> prefix_;
  SearchPath built_;
  int built_codes_ = 0;
  const ModelState* parent_;  // root_ or the last of the prefix states: the state stood on
};

}  // namespace

ProgramModel::ProgramModel(const ModelSettings& settings) : settings_(settings) {}

std::unique_ptr<ModelCursor> ProgramModel::cursor() const { return std::make_unique<ProgramCursor>(settings_); }

StatementCode ProgramModel::close_code() const { return pack_statement(close_statement()); }

spec::InvariantSet ProgramModel::checked() const { return settings_.checked(); }

std::vector<std::string> ProgramModel::carried() const { return carried_state(settings_.checks); }

std::size_t ProgramModel::table_rows() const { return statemachine::Machine::rows().rows().size(); }

// The statements of the path with its open blocks closed: a well-formed program.
spec::Program ProgramModel::program(const SearchPath& path) const {
  std::vector<Statement> statements = path.statements();
  int open = 0;
  for (const Statement& s : statements) {
    if (spec::opens_block(s.op)) ++open;
    if (s.op == spec::Op::Close) --open;
  }
  for (; open > 0; --open) statements.push_back(close_statement());
  return program_of(statements, settings_.alphabet);
}

// Who this model's states are: the table's rows, the flat state's size, and the fingerprints of
// the empty program and its successors. A build whose model or encoding differs (so its
// fingerprints mean other states) has another identity, whatever its version.
std::uint64_t ProgramModel::identity() const {
  XXH64_state_t* hash = XXH64_createState();
  XXH64_reset(hash, 0);
  for (const auto& row : statemachine::Machine::rows().rows()) {
    const std::string text = row.to_string();
    XXH64_update(hash, text.data(), text.size());
  }
  const std::uint64_t size = sizeof(ModelState);
  XXH64_update(hash, &size, sizeof size);
  ProgramCursor cursor(settings_);
  for (const Fingerprint& f : cursor.first_fingerprints()) {
    XXH64_update(hash, &f.high, sizeof f.high);
    XXH64_update(hash, &f.low, sizeof f.low);
  }
  const std::uint64_t identity = XXH64_digest(hash);
  XXH64_freeState(hash);
  return identity;
}

std::string ProgramModel::settings() const {
  const spec::InvariantSet checked_now = checked();
  std::string checks;
  for (spec::Invariant i : spec::kAllInvariants) {
    if (checked_now.contains(i)) checks += fmt::format("{}{}", checks.empty() ? "" : ",", spec::id(i));
  }
  const ResourceBounds& bounds = settings_.alphabet.bounds;
  std::string text = fmt::format("semantics={} modules={} tapes={} symmetry={} data-inputs={} canonical-ids={} check={}",
                                 spec::name(settings_.semantics), settings_.alphabet.modules, settings_.alphabet.tapes,
                                 settings_.alphabet.symmetry ? "on" : "off", settings_.alphabet.data ? "on" : "off",
                                 settings_.canonical_ids ? "on" : "off", checks);
  // Bounds appear only when set, so that the settings of a search without them read as before.
  if (bounds.open_blocks != 0) text += fmt::format(" max-open-blocks={}", bounds.open_blocks);
  if (bounds.live_nodes != 0) text += fmt::format(" max-live-nodes={}", bounds.live_nodes);
  const Abstractions& abstractions = settings_.abstractions;
  if (abstractions.unread_step_numbers) text += " abstract-step-numbers=on";
  if (abstractions.settled_ownership) text += " settled-ownership=on";
  if (abstractions.numerics_from_step_start) text += " numerics-from-step-start=on";
  if (abstractions.unread_backward_metas) text += " unread-backward-metas=on";
  if (abstractions.numerics_within_step) text += " numerics-within-step=on";
  if (abstractions.settled_transparency) text += " settled-transparency=on";
  if (abstractions.relative_step_counts) text += " relative-step-counts=on";
  if (abstractions.numerics_within_step_with_reference) text += " numerics-within-step-with-reference=on";
  if (abstractions.unsound_rename_program_alone) text += " program-renamed-alone";
  if (abstractions.unsound_saturate_step_counts) text += " step-counts-saturated";
  if (abstractions.unsound_settle_at_first_difference) text += " settled-at-first-difference";
  if (abstractions.unsound_forget_ownership) text += " ownership=forgotten";
  if (abstractions.unsound_held_steps_current) text += " held-steps=current";
  if (abstractions.unsound_rename_with_copies) text += " renamed-with-copies";
  return text;
}

}  // namespace fp8sm::explorer
