// The events' text for spec/format.hpp: each event's name and fields, written once here.
#include "spec/format.hpp"

namespace fp8sm::spec {

namespace {

std::string text(const AutocastEnter& e) {
  return fmt::format("AutocastEnter{{enabled={}, recompute_internal={}}}", e.enabled, e.recompute_internal);
}
std::string text(const AutocastExit&) { return "AutocastExit"; }
std::string text(const GradPush& e) { return fmt::format("GradPush{{enabled={}, internal={}}}", e.enabled, e.internal); }
std::string text(const GradPop&) { return "GradPop"; }
std::string text(const CheckpointForwardEnter& e) {
  return fmt::format("CheckpointForwardEnter{{capture={}, reentrant={}}}", e.capture, e.reentrant);
}
std::string text(const CheckpointForwardExit& e) { return fmt::format("CheckpointForwardExit{{exceptional={}}}", e.exceptional); }
std::string text(const RecomputeEnter& e) { return fmt::format("RecomputeEnter{{capture={}}}", e.capture); }
std::string text(const RecomputeExit&) { return "RecomputeExit"; }
std::string text(const ModulePrepare& e) { return fmt::format("ModulePrepare{{module={}}}", e.module); }
std::string text(const ModuleClaim& e) { return fmt::format("ModuleClaim{{module={}}}", e.module); }
std::string text(const ModuleEndForward& e) { return fmt::format("ModuleEndForward{{module={}}}", e.module); }
std::string text(const ModuleBackwardBegin& e) {
  return fmt::format("ModuleBackwardBegin{{module={}, ran_before={}}}", e.module, e.ran_before);
}
std::string text(const SavedTensorUnpack& e) {
  return fmt::format("SavedTensorUnpack{{reached={}, taken={}}}", e.reached, e.taken);
}
std::string text(const ModuleBackward& e) {
  return fmt::format("ModuleBackward{{module={}, owner={}, fp8={}}}", e.module, e.owner, e.fp8);
}
std::string text(const BackwardPassBegin&) { return "BackwardPassBegin"; }
std::string text(const BackwardPassEnd& e) { return fmt::format("BackwardPassEnd{{completed={}}}", e.completed); }
std::string text(const CheckpointReleased& e) { return fmt::format("CheckpointReleased{{capture={}}}", e.capture); }

}  // namespace

std::string event_text(const AnyEvent& event) {
  return std::visit([](const auto& e) { return text(e); }, event);
}

}  // namespace fp8sm::spec
