// The states of the table's four orthogonal regions: the booleans of spec §2.1 that change
// behaviour. Regions are listed in processing order (see transition_table.hpp).
#pragma once

#include <boost/msm/front/states.hpp>

namespace fp8sm::statemachine {

enum Region : int { kOwnershipRegion = 0, kCheckpointRegion = 1, kAutocastRegion = 2, kGradRegion = 3 };

}  // namespace fp8sm::statemachine

namespace fp8sm::statemachine::states {

namespace msmf = boost::msm::front;

// A state of region R. Written once here: a row's region is its source state's (the row
// catalogue reads it), and guards and observations that read a region find it here.
template <Region R>
struct RegionState : msmf::state<> {
  static constexpr Region kRegion = R;
};

// Region 0, ownership: TE's is_first_fp8_module (F).
struct OwnershipAvailable : RegionState<kOwnershipRegion> {};  // F = true: the next claim owns the backward update
struct OwnershipConsumed : RegionState<kOwnershipRegion> {};   // F = false (initial)

// Region 1, checkpoint: TE's _IN_ACTIVATION_RECOMPUTE_REGION and _ACTIVATION_RECOMPUTE_PHASE.
struct OutsideCheckpoint : RegionState<kCheckpointRegion> {};  // region = false, phase = false
struct InOriginalForward : RegionState<kCheckpointRegion> {};  // region = true,  phase = false
struct InRecompute : RegionState<kCheckpointRegion> {};        // region = true,  phase = true

// Region 2, autocast: depth 0, or the innermost autocast's `enabled` (fp8_enabled).
struct NoAutocast : RegionState<kAutocastRegion> {};
struct Fp8Autocast : RegionState<kAutocastRegion> {};
struct NonFp8Autocast : RegionState<kAutocastRegion> {};

// Region 3, torch grad mode.
struct GradEnabled : RegionState<kGradRegion> {};
struct GradDisabled : RegionState<kGradRegion> {};

}  // namespace fp8sm::statemachine::states
