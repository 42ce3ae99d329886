#include "explorer/verdict.hpp"

#include "spec/step_result.hpp"

namespace fp8sm::explorer {

namespace {
std::string module_name(std::uint16_t m) { return "module #" + std::to_string(m); }
const char* scope_name(std::uint16_t recompute) { return recompute != 0 ? "recompute" : "outermost autocast"; }
}  // namespace

std::string describe(const Violation& v) {
  switch (v.reason) {
    case Reason::NoForwardUpdateAtExit:
      return "an outermost enabled autocast exit with grad on made no forward update";
    case Reason::SecondForwardUpdateAtExit:
      return "a second forward update at one autocast exit";
    case Reason::ForwardUpdateElsewhere:
      return "a forward update outside an outermost user autocast exit (e.g. from a recompute)";
    case Reason::BackwardAfterPassUpdate:
      return "an FP8 module backward runs after the pass's backward update";
    case Reason::SecondBackwardUpdate:
      return "more than one backward update in one backward pass";
    case Reason::NoBackwardUpdateInPass:
      return "a backward pass ran FP8 module backwards but made no backward update";
    case Reason::LiveOwners:
      return std::to_string(v.a) + " live owners of the backward update in one " + scope_name(v.b);
    case Reason::OwnershipRevived:
      return "ownership revived inside a scope whose owner is still live";
    case Reason::BitLeavesScopeTrue:
      return std::string("the ownership bit leaves a ") + scope_name(v.b) + " true where it entered false";
    case Reason::StashLeftAtStepEnd:
      return module_name(v.a) + " ends the step with " + std::to_string(v.b) + " stash entries never popped";
    case Reason::KeptStashOfDroppedCheckpoint:
      return "a checkpoint that can never be recomputed again keeps " + std::to_string(v.a) + " stash entries";
    case Reason::FifoLeftAtStepEnd:
      return "the captured-bit FIFO ends the step with " + std::to_string(v.a) + " entries";
    case Reason::PopFoundNothing:
      return std::string("a pop found nothing to pop (") + spec::name(static_cast<spec::ExceptionKind>(v.a)) + ": " +
             std::string(v.text) + ")";
    case Reason::BitFromAnotherCheckpoint:
      return "a recompute installed the ownership bit captured by another checkpoint";
    case Reason::UnpairedStashPop:
      return module_name(v.a) + " popped a stash entry that its own checkpoint's recompute in this step did not push";
    case Reason::ReplayOutsideRecompute:
      return module_name(v.a) + " replayed a stash entry outside its own checkpoint's recompute";
    case Reason::ReplayNeverKept:
      return module_name(v.a) + " replayed a stash entry its checkpoint never kept";
    case Reason::FoldsRecomputeAmax:
      return "a forward update folds an amax produced by a recompute";
    case Reason::FoldsEarlierStepAmax:
      return "a forward update folds an amax from an earlier step";
    case Reason::RecomputeChangesScaling:
      return "a recompute leaves " + module_name(v.a) + "'s forward scaling changed";
    case Reason::RecomputeSeesOtherScaling:
      return "a recompute of " + module_name(v.a) + " sees other forward scaling than its original forward";
    case Reason::CheckpointFlagsLeftSet:
      return "the checkpoint region/phase flags stay set after a top-level statement";
    case Reason::Fp8LeftEnabled:
      return "fp8_enabled stays set outside every autocast";
    case Reason::BitLeftSet:
      return "the ownership bit is left set outside any autocast (soft form)";
    case Reason::AutocastDepthAtStepEnd:
      return "autocast depth is not 0 at step end";
    case Reason::TransparencyRaises:
      return "raises where the program without checkpoints does not (or the reverse)";
    case Reason::TransparencyCounts:
      return "counts " + std::to_string(v.a) + "/" + std::to_string(v.b) + " where the program without checkpoints gives " +
             std::to_string(v.c) + "/" + std::to_string(v.d);
    case Reason::TransparencyNumerics:
      return "amax histories or scales differ from the program without checkpoints";
    case Reason::CastButNotRegistered:
      return module_name(v.a) + " cast in FP8 but is not registered";
    case Reason::RegisteredTwice:
      return module_name(v.a) + " registered twice";
    case Reason::RegisteredInRecompute:
      return module_name(v.a) + " first registered during a recompute";
  }
  return "?";
}

}  // namespace fp8sm::explorer
