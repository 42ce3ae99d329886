// The runtime's context: construction, modules, the tape and backward passes, steps, and the
// host's answers to the driver. Scopes are context_scopes.cpp, error messages context_errors.cpp,
// the table's actions context_hooks.cpp.
#include "runtime/context.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <variant>

#include "driver/driver.hpp"
#include "runtime/errors.hpp"
#include "statemachine/machine.hpp"
#include "statemachine/observer.hpp"

namespace fp8sm::runtime {

using spec::CaptureId;
using spec::ModuleId;

namespace {
constexpr std::size_t kForwardSlots = 2;   // input, weight
constexpr std::size_t kBackwardSlots = 1;  // grad_output
}  // namespace

Context::Context(Recipe recipe, std::unique_ptr<Backend> backend, spec::Semantics semantics, AmaxReductionGroup* group)
    : recipe_((recipe.validate(), recipe)),
      backend_(std::move(backend)),
      group_(group),
      machine_(std::make_unique<statemachine::Machine>(semantics, static_cast<statemachine::Hooks*>(this))),
      silent_(std::make_unique<statemachine::Observer>()),
      driver_state_(std::make_unique<driver::DriverState<RuntimeTraits>>()),
      driver_(std::make_unique<Driver>(*machine_, *this, *silent_, *driver_state_)) {
  if (!backend_) throw std::invalid_argument("Context: no backend");
}

Context::~Context() = default;

bool Context::grad_enabled() const { return machine_->grad_enabled(); }
bool Context::fp8_enabled() const { return machine_->fp8_enabled(); }
int Context::autocast_depth() const { return machine_->autocast_depth(); }

void Context::log_events(std::vector<FiredEvent>* log) {
  event_log_ = log;
  rows_taken_.clear();
  machine_->record_rows(log != nullptr ? &rows_taken_ : nullptr);
}

// ---- the driver's host ----------------------------------------------------------------------

// Keeps the FP8 regions (an outermost autocast, or a recompute's own) for run_module's check.
void Context::event_fired(const spec::AnyEvent& event, const std::optional<spec::RaisedException>& raised) {
  if (event_log_ != nullptr) {
    event_log_->push_back(FiredEvent{event, raised ? spec::name(raised->kind) : std::string(), rows_taken_});
    rows_taken_.clear();
  }
  if (const auto* enter = std::get_if<spec::AutocastEnter>(&event)) {
    if (raised) return;
    const bool opens_region = enter->recompute_internal || machine_->autocast_depth() == 1;
    autocast_opens_region_.push_back(opens_region);
    if (opens_region) region_runs_.emplace_back();
  } else if (std::holds_alternative<spec::AutocastExit>(event) && !autocast_opens_region_.empty()) {
    if (autocast_opens_region_.back() && !region_runs_.empty()) region_runs_.pop_back();
    autocast_opens_region_.pop_back();
  }
}

// A recompute: the checkpoint's function again, on its input; what it returns is not used.
driver::Done Context::run_body(const RuntimeTraits::Body& body) {
  body->function(body->input);
  return driver::Done::Normally;
}

// The runtime throws every exception of the program (raise()): the driver's operations all
// end normally or throw, never return Raising.
void Context::completes(driver::Done done) {
  if (done == driver::Done::Raising) throw std::logic_error("the driver returned a raise the runtime did not throw");
}

// §3.5 "Saved-tensor slots": after the table let the unpack through, the node takes its
// twin's saved tensors; the twin must be the same kind of node.
void Context::take_twin(NodeFunction& node, const std::shared_ptr<NodeFunction>& twin, std::uint32_t slot,
                        CaptureId capture) {
  if (!twin) throw std::logic_error(fmt::format("checkpoint: slot {} was freed before its unpack", slot));
  if (!node.is_twin(*twin)) {
    throw CheckpointError(fmt::format("checkpoint: the non-reentrant recompute of checkpoint #{} recorded another node at "
                                      "slot {} than its forward did: the checkpointed function must take the same path "
                                      "when it is run again",
                                      capture, slot));
  }
  node.take_saved(*twin);
}

// ---- modules ------------------------------------------------------------------------------

ModuleId Context::add_module(const std::string& name) {
  if (modules_.size() > 0xFFFF) throw std::length_error("Context: too many modules");
  ModuleMeta m;
  m.name = name;
  m.forward = kernels::ScalingMeta::fresh(recipe_.amax_history_len, kForwardSlots);
  m.backward = kernels::ScalingMeta::fresh(recipe_.amax_history_len, kBackwardSlots);
  modules_.push_back(std::move(m));
  return static_cast<ModuleId>(modules_.size() - 1);
}

Matrix Context::run_module(ModuleId m, const ModuleCompute& compute) {
  // The misuse check comes before any event, so that a refused call changes nothing. Whether
  // the run is FP8 is what prepare_forward will read: the innermost autocast's flag.
  if (recipe_.reduce_amax && machine_->fp8_enabled() && !region_runs_.empty() && region_runs_.back().count(m) != 0) {
    throw MisuseError(fmt::format("module '{}' ran twice in one FP8 autocast region while reduce_amax is set: its amax "
                                  "row would mix two casts (TE forbids it; give each use its own module, or set "
                                  "reduce_amax=false)",
                                  modules_[m].name));
  }
  bool fp8 = false;
  completes(driver_->module_forward_begin(m, fp8));
  if (fp8 && !region_runs_.empty()) region_runs_.back().insert(m);
  std::pair<Matrix, std::shared_ptr<NodeFunction>> result;
  try {
    result = compute(fp8);
  } catch (...) {
    completes(driver_->module_forward_failed(m));
    throw;
  }
  completes(driver_->module_forward_end(m, std::move(result.second)));
  return std::move(result.first);
}

void Context::record_function(std::shared_ptr<NodeFunction> function) { driver_->function_recorded(std::move(function)); }

Context::TapeMark Context::mark() const {
  const driver::TapeMark<statemachine::GrowableStorage> m = driver_->mark();
  return {m.generation, m.size};
}

void Context::discard_since(const TapeMark& mark) {
  completes(driver_->discard_since(driver::TapeMark<statemachine::GrowableStorage>{mark.generation, static_cast<std::uint32_t>(mark.size)}));
}
bool Context::has_recorded() const { return driver_->has_recorded(spec::kCurrentGraph); }
bool Context::in_recompute() const { return driver_->recompute_depth() > 0; }

bool Context::has_recorded(const std::string& tape) const {
  const auto found = tapes_.find(tape);
  return found != tapes_.end() && driver_->has_recorded(found->second);
}

// ---- backward -------------------------------------------------------------------------------

Matrix Context::backward(const Matrix& grad_output, bool retain_graph) {
  return run_backward(spec::kCurrentGraph, grad_output, retain_graph, "backward");
}

Matrix Context::backward(const std::string& tape, const Matrix& grad_output, bool retain_graph) {
  const auto found = tapes_.find(tape);
  if (found == tapes_.end()) throw MisuseError(fmt::format("backward: no graph was saved as '{}' (save_graph first)", tape));
  return run_backward(found->second, grad_output, retain_graph, fmt::format("backward of tape '{}'", tape));
}

void Context::save_graph(const std::string& tape) {
  if (checkpoints_open_ > 0 || driver_->recompute_depth() > 0) {
    throw MisuseError("save_graph: inside a checkpoint's function (its recompute would save the graph again)");
  }
  auto found = tapes_.find(tape);
  if (found == tapes_.end()) {
    if (tapes_.size() >= spec::kCurrentGraph) throw std::length_error("save_graph: too many tapes");
    found = tapes_.emplace(tape, static_cast<std::uint16_t>(tapes_.size())).first;
  }
  completes(driver_->save(found->second));
}

Matrix Context::run_backward(std::uint16_t tape, const Matrix& grad_output, bool retain_graph, const std::string& what) {
  if (checkpoints_open_ > 0 || driver_->recompute_depth() > 0) {
    throw MisuseError(fmt::format("{}: inside a checkpoint's function (its recompute would run the backward again)", what));
  }
  require_finite(grad_output, fmt::format("{}: grad_output", what));
  grad_ = grad_output;
  try {
    completes(driver_->backward(tape, retain_graph));
  } catch (...) {
    grad_ = Matrix{};
    throw;
  }
  return std::exchange(grad_, Matrix{});
}

StepCounts Context::end_step() {
  if (!scopes_.empty()) {
    throw MisuseError(fmt::format("end_step: the {} scope #{} is still open (a step ends outside every scope)",
                                  scope_name(scopes_.back().kind), scopes_.back().id));
  }
  completes(driver_->end_step());  // what was recorded and never backpropagated
  driver_->forget_unreachable();
  const StepCounts done = counts_;
  counts_ = StepCounts{};
  return done;
}

}  // namespace fp8sm::runtime
