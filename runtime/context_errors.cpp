// What the runtime says when the table (or torch, in the model's words) raises: the event and
// the module it concerns, the recompute it happened in, and the semantics.
#include <iterator>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>

#include "driver/driver.hpp"
#include "runtime/context.hpp"
#include "runtime/errors.hpp"
#include "spec/format.hpp"
#include "statemachine/machine.hpp"

namespace fp8sm::runtime {

using spec::CaptureId;

namespace {

// What the program was doing when the table raised, for StateError's message.
std::string doing(const spec::AutocastEnter&) { return "entering an autocast"; }
std::string doing(const spec::AutocastExit&) { return "leaving an autocast"; }
std::string doing(const spec::GradPush&) { return "changing the grad mode"; }
std::string doing(const spec::GradPop&) { return "restoring the grad mode"; }
std::string doing(const spec::CheckpointForwardEnter& e) { return fmt::format("entering the forward of checkpoint #{}", e.capture); }
std::string doing(const spec::CheckpointForwardExit&) { return "leaving a checkpoint's forward"; }
std::string doing(const spec::RecomputeEnter& e) { return fmt::format("entering the recompute of checkpoint #{}", e.capture); }
std::string doing(const spec::RecomputeExit&) { return "leaving a recompute"; }
std::string doing(const spec::ModulePrepare&) { return "preparing the forward of module"; }
std::string doing(const spec::ModuleClaim&) { return "recording module"; }
std::string doing(const spec::ModuleEndForward&) { return "ending the forward of module"; }
std::string doing(const spec::ModuleBackwardBegin&) { return "beginning the backward of module"; }
std::string doing(const spec::SavedTensorUnpack&) { return "unpacking what a node saved in a non-reentrant checkpoint"; }
std::string doing(const spec::ModuleBackward&) { return "the backward of module"; }
std::string doing(const spec::BackwardPassBegin&) { return "beginning a backward pass"; }
std::string doing(const spec::BackwardPassEnd&) { return "ending a backward pass"; }
std::string doing(const spec::CheckpointReleased& e) { return fmt::format("releasing checkpoint #{}", e.capture); }

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
          if constexpr (NamesModule<std::decay_t<decltype(e)>>::value) {
            return fmt::format("{} '{}'", doing(e), modules_.at(e.module).name);
          }
          return doing(e);
        },
        *event);
  }
  if (const std::optional<CaptureId> capture = driver_->innermost_recompute()) {
    fmt::format_to(std::back_inserter(what), " in the recompute of checkpoint #{}", *capture);
  }
  throw StateError(spec::name(raised.kind),
                   fmt::format("{} (while {}, under the {} semantics)", raised.message, what, machine_->semantics()));
}

}  // namespace fp8sm::runtime
