// The counters and stacks of the machine (spec §2), read by guards and changed by actions.
// The booleans that change behaviour are not here: they are the states of the table's regions
// (transition_table.hpp). Each region owns the data its rows change.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

#include "spec/events.hpp"
#include "spec/semantics.hpp"
#include "spec/step_result.hpp"

namespace fp8sm::statemachine {

using spec::CaptureId;
using spec::ModuleId;

// Mirrors of the region states, for stacks that remember "the state before this entry".
enum class CheckpointPhase : std::uint8_t { Outside, OriginalForward, Recompute };
enum class AutocastMode : std::uint8_t { None, Fp8, NonFp8 };

// pr3213's per-checkpoint capture record C (spec §2.4).
struct CaptureRecord {
  enum class Bit : std::uint8_t { Unset, False, True };
  Bit bit = Bit::Unset;
  bool completed = false;  // the original forward exited normally
};

// Upstream's class-level FIFO of captured bits (spec §2.1). `capture` names the checkpoint
// that pushed the entry: TE does not keep it, the checkers need it to pair push and pop.
struct FifoEntry {
  bool bit = false;
  CaptureId capture = 0;
};

// pr3213 saves the caller's bit at every ARF entry (the `prev` of spec §3.4).
struct OwnershipFrame {
  bool bit_before = false;
  CaptureId capture = 0;
};

struct AutocastFrame {
  AutocastMode mode_before = AutocastMode::None;  // restored at exit (the snap of §2.2)
  bool recompute_internal = false;
};

// Per module (spec §2.3), control part only; the tensors are behind Hooks.
struct ModuleFlags {
  bool fp8 = false;                // cached result of the last normal-branch init_fp8_metadata
  bool registered = false;         // has joined the amax registry
  bool has_stash_pos = false;      // global_fp8_buffer_pos_fwd_recompute exists
  std::uint16_t stash_depth = 0;   // entries in its deque
  bool has_saved_for_restore = false;  // updated_amax_history_fwd exists
  bool restore_pending = false;        // fp8sm: a recompute replaced its meta until end_forward
};

struct MachineData {
  spec::Semantics semantics = spec::Semantics::Upstream;

  // Ownership region.
  std::vector<bool> bit_at_autocast_entry;  // snap.F of each open autocast
  std::vector<OwnershipFrame> ownership_frames;  // pr3213: one per open ARF
  std::deque<FifoEntry> fifo;                    // upstream only
  std::vector<CaptureRecord> captures;           // pr3213 only; index = CaptureId

  // Checkpoint region: per open ARF, the (region, phase) before it, the checkpoint it belongs
  // to, and (fp8sm) the modules a recompute has replayed so far.
  struct CheckpointFrame {
    CheckpointPhase before = CheckpointPhase::Outside;
    CaptureId capture = 0;
    bool recompute = false;
    std::vector<ModuleId> replayed;
  };
  std::vector<CheckpointFrame> checkpoint_frames;
  // fp8sm: per checkpoint instance (index = CaptureId), every module run of its original
  // forward, in order, and whether it ran in FP8 (only those have a stashed meta).
  struct StashedRun {
    ModuleId module = 0;
    bool fp8 = false;
  };
  std::vector<std::vector<StashedRun>> checkpoint_stash;

  // Autocast region: one frame per open autocast; depth is its size.
  std::vector<AutocastFrame> autocasts;

  // Grad region: the grad mode before each push, and the program's own grad mode (its no_grad
  // blocks, not a checkpoint's or the backward engine's pushes).
  struct GradFrame {
    bool grad_before = true;
    bool user_grad_before = true;
  };
  std::vector<GradFrame> grad_frames;
  bool user_grad = true;

  // fp8sm: FP8 module backwards run by the backward pass in progress.
  std::uint16_t fp8_backwards_in_pass = 0;

  std::vector<ModuleFlags> modules;  // index = ModuleId, grown on first use

  // The exception the last event raised (KeyError, IndexError, RuntimeError), if any.
  std::optional<spec::RaisedException> error;

  // For actions: the record, created on first use.
  ModuleFlags& module(ModuleId m) {
    if (m >= modules.size()) modules.resize(m + 1u);
    return modules[m];
  }
  CaptureRecord& capture(CaptureId c) {
    if (c >= captures.size()) captures.resize(c + 1u);
    return captures[c];
  }
  std::vector<StashedRun>& stash_of(CaptureId c) {
    if (c >= checkpoint_stash.size()) checkpoint_stash.resize(c + 1u);
    return checkpoint_stash[c];
  }
  // fp8sm: the innermost recompute in progress, or nullptr.
  const CheckpointFrame* innermost_recompute() const {
    for (auto it = checkpoint_frames.rbegin(); it != checkpoint_frames.rend(); ++it) {
      if (it->recompute) return &*it;
    }
    return nullptr;
  }
  CheckpointFrame* innermost_recompute() {
    return const_cast<CheckpointFrame*>(static_cast<const MachineData*>(this)->innermost_recompute());
  }
  // fp8sm: the run of module `m` of the innermost recompute's original forward that the
  // recompute's next run of `m` replays, or nullptr when the original ran `m` fewer times.
  const StashedRun* replay_entry(ModuleId m) const {
    const CheckpointFrame* frame = innermost_recompute();
    if (frame == nullptr || frame->capture >= checkpoint_stash.size()) return nullptr;
    auto k = std::count(frame->replayed.begin(), frame->replayed.end(), m);
    for (const StashedRun& run : checkpoint_stash[frame->capture]) {
      if (run.module == m && k-- == 0) return &run;
    }
    return nullptr;
  }

  // For guards, which change nothing: a record never created reads as its initial value.
  ModuleFlags module_flags(ModuleId m) const { return m < modules.size() ? modules[m] : ModuleFlags{}; }
  CaptureRecord capture_record(CaptureId c) const { return c < captures.size() ? captures[c] : CaptureRecord{}; }
};

}  // namespace fp8sm::statemachine
