// The counters and stacks of the machine (spec §2), read by guards and changed by actions.
// The booleans that change behaviour are not here: they are the states of the table's regions
// (transition_table.hpp). Each region owns the data its rows change.
//
// The data is a template over its storage (statemachine/storage.hpp): growable lists for the
// runtime and `explorer run`, fixed-capacity ones for the exhaustive search. Tables that
// belong to a checkpoint instance are indexed by its capture id (dense for pr3213's capture
// records; one flat list of tagged runs for fp8sm's stash, where a list per capture would
// make the flat state a table of tables).
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <type_traits>

#include "spec/events.hpp"
#include "spec/semantics.hpp"
#include "spec/step_result.hpp"
#include "statemachine/replay_index.hpp"
#include "statemachine/storage.hpp"

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

// Per module (spec §2.3), control part only; the tensors are behind Hooks.
struct ModuleFlags {
  std::uint16_t stash_depth = 0;       // entries in its deque
  bool fp8 = false;                    // cached result of the last normal-branch init_fp8_metadata
  bool registered = false;             // has joined the amax registry
  bool has_stash_pos = false;          // global_fp8_buffer_pos_fwd_recompute exists
  bool has_saved_for_restore = false;  // updated_amax_history_fwd exists
  bool restore_pending = false;        // fp8sm: a recompute replaced its meta until end_forward
  std::uint8_t unused = 0;             // no padding: flat states are hashed as bytes
};

// The lists of the machine's data and their capacities in the flat state, which serves every
// program of up to 8 statements (docs/explorer.md, *Capacities*): autocasts and checkpoints open
// at once, the recompute's own frames on top, and what upstream leaks across steps.
namespace capacity {
FP8SM_CAPACITY(AutocastFrames, 24, "open autocast regions");
FP8SM_CAPACITY(OwnershipFrames, 24, "open checkpoint contexts (ownership frames)");
FP8SM_CAPACITY(CapturedBits, 32, "captured ownership bits (upstream's FIFO)");
FP8SM_CAPACITY(CaptureRecords, 48, "checkpoint capture records");
FP8SM_CAPACITY(CheckpointFrames, 24, "open checkpoint contexts");
FP8SM_CAPACITY(ReplayedRuns, 32, "module runs replayed by a recompute");
FP8SM_CAPACITY(StashedRuns, 32, "module runs stashed by checkpoints");
FP8SM_CAPACITY(GradFrames, 24, "grad-mode pushes");
FP8SM_CAPACITY(Modules, 8, "modules");
}  // namespace capacity

template <class S>
struct MachineData {
  using Storage = S;
  using Id = typename S::Id;
  template <class T, class Tag>
  using List = typename S::template List<T, Tag>;

  // Upstream's class-level FIFO of captured bits (spec §2.1). `capture` names the checkpoint
  // that pushed the entry: TE does not keep it, the checkers need it to pair push and pop.
  struct FifoEntry {
    bool bit = false;
    Id capture = 0;
  };
  // pr3213 saves the caller's bit at every ARF entry (the `prev` of spec §3.4).
  struct OwnershipFrame {
    bool bit_before = false;
    Id capture = 0;
  };
  // Checkpoint region: per open ARF, the (region, phase) before it, the checkpoint it belongs to.
  struct CheckpointFrame {
    CheckpointPhase before = CheckpointPhase::Outside;
    Id capture = 0;
    bool recompute = false;
  };
  // fp8sm: a module the recompute of checkpoint frame `frame` has replayed so far.
  struct ReplayedRun {
    Id frame = 0;
    Id module = 0;
  };
  // fp8sm: one module run of checkpoint `capture`'s original forward, in order, and whether it
  // ran in FP8 (only those have a stashed meta).
  struct StashedRun {
    Id capture = 0;
    Id module = 0;
    bool fp8 = false;
  };
  struct AutocastFrame {
    AutocastMode mode_before = AutocastMode::None;  // restored at exit (the snap of §2.2)
    bool recompute_internal = false;
  };
  // The grad mode before each push, and the program's own grad mode before it.
  struct GradFrame {
    bool grad_before = true;
    bool user_grad_before = true;
  };

  // fp8sm: the two lists a recompute reads at each module it replays, plain in the flat state
  // and indexed in the growable storage (replay_index.hpp says why).
  using ReplayedRuns =
      std::conditional_t<S::kFlat, List<ReplayedRun, capacity::ReplayedRuns>, IndexedReplayedRuns<ReplayedRun>>;
  using StashedRuns = std::conditional_t<S::kFlat, List<StashedRun, capacity::StashedRuns>, IndexedStash<StashedRun>>;

  spec::Semantics semantics = spec::Semantics::Upstream;

  // Ownership region.
  List<bool, capacity::AutocastFrames> bit_at_autocast_entry;      // snap.F of each open autocast
  List<OwnershipFrame, capacity::OwnershipFrames> ownership_frames;  // pr3213: one per open ARF
  List<FifoEntry, capacity::CapturedBits> fifo;                      // upstream only, front first
  List<CaptureRecord, capacity::CaptureRecords> captures;            // pr3213 only; index = capture id

  // Checkpoint region.
  List<CheckpointFrame, capacity::CheckpointFrames> checkpoint_frames;
  ReplayedRuns replayed;  // fp8sm, recompute frames only, in order
  // fp8sm: the stash kept per checkpoint instance. A capture below `stash_slots` has an
  // entry (perhaps empty); its runs are those of `stash_runs` tagged with it, in order.
  // In the flat state `stash_runs` is grouped by capture (storage.hpp, insert_grouped), so that
  // a recompute finds its checkpoint's runs without reading those of every checkpoint around it.
  Id stash_slots = 0;
  StashedRuns stash_runs;

  // Autocast region: one frame per open autocast; depth is its size.
  List<AutocastFrame, capacity::AutocastFrames> autocasts;

  // Grad region, and the program's own grad mode (its no_grad blocks, not a checkpoint's or
  // the backward engine's pushes).
  List<GradFrame, capacity::GradFrames> grad_frames;
  bool user_grad = true;

  // fp8sm: FP8 module backwards run by the backward pass in progress.
  std::uint16_t fp8_backwards_in_pass = 0;

  List<ModuleFlags, capacity::Modules> modules;  // index = ModuleId, grown on first use

  // The exception the last event raised (KeyError, IndexError, RuntimeError), if any.
  std::optional<spec::RaisedException> error;

  // ---- for actions: records created on first use ----------------------------------------
  ModuleFlags& module(ModuleId m) {
    if (m >= modules.size()) modules.resize(m + 1u);
    return modules[m];
  }
  CaptureRecord& capture(CaptureId c) {
    if (c >= captures.size()) captures.resize(c + 1u);
    return captures[c];
  }
  // fp8sm: capture `c`'s stash entry exists from now on (it may stay empty).
  void open_stash(CaptureId c) { stash_slots = std::max(stash_slots, to_id<S>(c + 1u)); }
  void clear_stash(CaptureId c) {
    open_stash(c);
    if constexpr (S::kFlat) {
      stash_runs.erase(std::remove_if(stash_runs.begin(), stash_runs.end(),
                                      [&](const StashedRun& r) { return r.capture == c; }),
                       stash_runs.end());
    } else {
      stash_runs.erase(to_id<S>(c));
    }
  }
  // fp8sm: the innermost recompute (at frame position `frame`) has replayed a run of `m`.
  void note_replayed(int frame, ModuleId m) { replayed.push_back(ReplayedRun{to_id<S>(frame), to_id<S>(m)}); }
  // fp8sm: pushing a checkpoint frame starts with nothing replayed; popping one forgets what
  // its recompute replayed (always the tail: only the innermost recompute replays).
  void forget_replayed_of_top_frame() {
    const auto top = static_cast<std::size_t>(checkpoint_frames.size() - 1);
    while (!replayed.empty() && replayed.back().frame == top) replayed.pop_back();
  }

  // fp8sm: the position of the innermost recompute in progress among the frames, or -1.
  int innermost_recompute() const {
    for (std::size_t i = checkpoint_frames.size(); i-- > 0;) {
      if (checkpoint_frames[i].recompute) return static_cast<int>(i);
    }
    return -1;
  }
  // fp8sm: the run of module `m` of the innermost recompute's original forward that the
  // recompute's next run of `m` replays (the k-th when it has replayed k), or none when the
  // original ran `m` fewer times.
  std::optional<ReplayEntry> replay_entry(ModuleId m) const {
    const int frame = innermost_recompute();
    if (frame < 0) return std::nullopt;
    const Id capture = checkpoint_frames[static_cast<std::size_t>(frame)].capture;
    if (capture >= stash_slots) return std::nullopt;
    if constexpr (S::kFlat) {
      auto k = std::count_if(replayed.begin(), replayed.end(), [&](const ReplayedRun& r) {
        return r.frame == static_cast<Id>(frame) && r.module == m;
      });
      unsigned fp8_rank = 0;
      const auto [first, last] = stash_of(capture);
      for (auto run = first; run != last; ++run) {
        if (run->module != m) continue;
        if (k-- == 0) return ReplayEntry{run->fp8, fp8_rank};
        fp8_rank += run->fp8 ? 1u : 0u;
      }
      return std::nullopt;
    } else {
      return stash_runs.run_of_module(capture, to_id<S>(m), replayed.count(to_id<S>(frame), to_id<S>(m)));
    }
  }
  // fp8sm: checkpoint `c`'s stashed runs, in order: [first, last).
  auto stash_of(CaptureId c) const {
    if constexpr (S::kFlat) {
      return group_of(stash_runs, c, [](const StashedRun& r) -> CaptureId { return r.capture; });
    } else {
      return stash_runs.runs_of(to_id<S>(c));
    }
  }
  void add_stash_runs(const StashedRun* runs, std::size_t count) {
    if constexpr (S::kFlat) {
      insert_grouped(stash_runs, runs, count, [](const StashedRun& r) { return r.capture; });
    } else {
      for (std::size_t i = 0; i < count; ++i) stash_runs.add(runs[i]);
    }
  }

  // ---- for guards, which change nothing: a record never created reads as its initial value --
  ModuleFlags module_flags(ModuleId m) const { return m < modules.size() ? modules[m] : ModuleFlags{}; }
  CaptureRecord capture_record(CaptureId c) const { return c < captures.size() ? captures[c] : CaptureRecord{}; }
};

// The region states (Boost.MSM's state ids, one byte each) and the data: everything a machine
// is between two events.
template <class S>
struct MachineState {
  std::uint8_t regions[4] = {0, 0, 0, 0};  // ownership, checkpoint, autocast, grad
  MachineData<S> data;
};

// Every field of a machine's state, each once, in order: the one list that its encodings walk
// (BasicMachine::encode, the search's canonical bytes in explorer/model/canonical_state.cpp),
// so that a field added here is written by both, or fails to compile in the one that does not
// know how to write its type. f(field) for most; f(table, keyed_by_it) for a table whose
// entries are tagged with another field's positions (what each checkpoint frame's recompute
// replayed; each capture's stash, for the captures below stash_slots). Not visited: `error`,
// the exception of the event being processed, which is empty between events (fire() resets
// it before and after).
template <class S, class F>
inline void for_each_field(const MachineState<S>& state, F&& f) {
  const MachineData<S>& d = state.data;
  f(state.regions);
  f(d.semantics);
  f(d.bit_at_autocast_entry);
  f(d.ownership_frames);
  f(d.fifo);
  f(d.captures);
  f(d.checkpoint_frames, d.replayed);
  f(d.stash_slots, d.stash_runs);
  f(d.autocasts);
  f(d.grad_frames);
  f(d.user_grad);
  f(d.fp8_backwards_in_pass);
  f(d.modules);
}

}  // namespace fp8sm::statemachine
