#include "explorer/model/verdict.hpp"

#include "spec/format.hpp"
#include "spec/step_result.hpp"

namespace fp8sm::explorer {

namespace {
std::string module_name(std::uint16_t m) { return fmt::format("module #{}", m); }
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
      return fmt::format("{} live owners of the backward update in one {}", v.a, scope_name(v.b));
    case Reason::OwnershipRevived:
      return "ownership revived inside a scope whose owner is still live";
    case Reason::BitLeavesScopeTrue:
      return fmt::format("the ownership bit leaves a {} true where it entered false", scope_name(v.b));
    case Reason::StashLeftAtStepEnd:
      return fmt::format("{} ends the step with {} stash entries never popped", module_name(v.a), v.b);
    case Reason::KeptStashOfDroppedCheckpoint:
      return fmt::format("a checkpoint that can never be recomputed again keeps {} stash entries", v.a);
    case Reason::FifoLeftAtStepEnd:
      return fmt::format("the captured-bit FIFO ends the step with {} entries", v.a);
    case Reason::PopFoundNothing:
      return fmt::format("a pop found nothing to pop ({}: {})", static_cast<spec::ExceptionKind>(v.a), v.text);
    case Reason::BitFromAnotherCheckpoint:
      return "a recompute installed the ownership bit captured by another checkpoint";
    case Reason::UnpairedStashPop:
      return fmt::format("{} popped a stash entry that its own checkpoint's recompute in this step did not push",
                         module_name(v.a));
    case Reason::ReplayOutsideRecompute:
      return fmt::format("{} replayed a stash entry outside its own checkpoint's recompute", module_name(v.a));
    case Reason::ReplayNeverKept:
      return fmt::format("{} replayed a stash entry its checkpoint never kept", module_name(v.a));
    case Reason::FoldsRecomputeAmax:
      return "a forward update folds an amax produced by a recompute";
    case Reason::FoldsEarlierStepAmax:
      return "a forward update folds an amax from an earlier step";
    case Reason::RecomputeChangesScaling:
      return fmt::format("a recompute leaves {}'s forward scaling changed", module_name(v.a));
    case Reason::RecomputeSeesOtherScaling:
      return fmt::format("a recompute of {} sees other forward scaling than its original forward", module_name(v.a));
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
      return fmt::format("counts {}/{} where the program without checkpoints gives {}/{}", v.a, v.b, v.c, v.d);
    case Reason::TransparencyNumerics:
      return "amax histories or scales differ from the program without checkpoints";
    case Reason::CastButNotRegistered:
      return fmt::format("{} cast in FP8 but is not registered", module_name(v.a));
    case Reason::RegisteredTwice:
      return fmt::format("{} registered twice", module_name(v.a));
    case Reason::RegisteredInRecompute:
      return fmt::format("{} first registered during a recompute", module_name(v.a));
  }
  return "?";
}

}  // namespace fp8sm::explorer
