// The states of the table's four orthogonal regions: the booleans of spec §2.1 that change
// behaviour. Regions are listed in processing order (see transition_table.hpp).
#pragma once

#include <boost/msm/front/states.hpp>

namespace fp8sm::statemachine::states {

namespace msmf = boost::msm::front;

// Region 0, ownership: TE's is_first_fp8_module (F).
struct OwnershipAvailable : msmf::state<> {};  // F = true: the next claim owns the backward update
struct OwnershipConsumed : msmf::state<> {};   // F = false (initial)

// Region 1, checkpoint: TE's _IN_ACTIVATION_RECOMPUTE_REGION and _ACTIVATION_RECOMPUTE_PHASE.
struct OutsideCheckpoint : msmf::state<> {};  // region = false, phase = false
struct InOriginalForward : msmf::state<> {};  // region = true,  phase = false
struct InRecompute : msmf::state<> {};        // region = true,  phase = true

// Region 2, autocast: depth 0, or the innermost autocast's `enabled` (fp8_enabled).
struct NoAutocast : msmf::state<> {};
struct Fp8Autocast : msmf::state<> {};
struct NonFp8Autocast : msmf::state<> {};

// Region 3, torch grad mode.
struct GradEnabled : msmf::state<> {};
struct GradDisabled : msmf::state<> {};

}  // namespace fp8sm::statemachine::states
