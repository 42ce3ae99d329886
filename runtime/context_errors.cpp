// What the runtime says when the table (or torch, in the model's words) raises: the event and
// the module it concerns, the recompute it happened in, and the semantics.
#include <string>
#include <type_traits>
#include <utility>
#include <variant>

#include "driver/driver.hpp"
#include "runtime/context.hpp"
#include "runtime/errors.hpp"
#include "statemachine/machine.hpp"

namespace fp8sm::runtime {

using spec::CaptureId;

namespace {

// What the program was doing when the table raised, for StateError's message.
std::string doing(const spec::AutocastEnter&) { return "entering an autocast"; }
std::string doing(const spec::AutocastExit&) { return "leaving an autocast"; }
std::string doing(const spec::GradPush&) { return "changing the grad mode"; }
std::string doing(const spec::GradPop&) { return "restoring the grad mode"; }
std::string doing(const spec::CheckpointForwardEnter& e) { return "entering the forward of checkpoint #" + std::to_string(e.capture); }
std::string doing(const spec::CheckpointForwardExit&) { return "leaving a checkpoint's forward"; }
std::string doing(const spec::RecomputeEnter& e) { return "entering the recompute of checkpoint #" + std::to_string(e.capture); }
std::string doing(const spec::RecomputeExit&) { return "leaving a recompute"; }
std::string doing(const spec::ModulePrepare&) { return "preparing the forward of module"; }
std::string doing(const spec::ModuleClaim&) { return "recording module"; }
std::string doing(const spec::ModuleEndForward&) { return "ending the forward of module"; }
std::string doing(const spec::ModuleBackwardBegin&) { return "beginning the backward of module"; }
std::string doing(const spec::SavedTensorUnpack&) { return "unpacking what a node saved in a non-reentrant checkpoint"; }
std::string doing(const spec::ModuleBackward&) { return "the backward of module"; }
std::string doing(const spec::BackwardPassBegin&) { return "beginning a backward pass"; }
std::string doing(const spec::BackwardPassEnd&) { return "ending a backward pass"; }
std::string doing(const spec::CheckpointReleased& e) { return "releasing checkpoint #" + std::to_string(e.capture); }

// Module events name their module; the others do not.
template <class Event, class = void>
struct NamesModule : std::false_type {};
template <class Event>
struct NamesModule<Event, std::void_t<decltype(std::declval<Event>().module)>> : std::true_type {};
}  // namespace

void Context::raise(const spec::AnyEvent* event, spec::RaisedException raised) {
  std::string what = "backpropagating a graph";  // torch's own error, not the table's
  if (event != nullptr) {
    what = std::visit(
        [&](const auto& e) {
          std::string text = doing(e);
          if constexpr (NamesModule<std::decay_t<decltype(e)>>::value) text += " '" + modules_.at(e.module).name + "'";
          return text;
        },
        *event);
  }
  if (const std::optional<CaptureId> capture = driver_->innermost_recompute()) {
    what += " in the recompute of checkpoint #" + std::to_string(*capture);
  }
  throw StateError(spec::name(raised.kind), std::string(raised.message) + " (while " + what + ", under the " +
                                    std::string(spec::name(machine_->semantics())) + " semantics)");
}

}  // namespace fp8sm::runtime
