// What the invariant observers carry between statements: one plain struct per observer, over
// the model's storage (statemachine/storage.hpp), so that the exhaustive search keeps them
// inside its flat state values, and only those of the invariants it checks.
//
//   ProgramGradState      I1   the grad mode the program itself set (its no_grad blocks)
//   OwnershipState        I3   ownership scopes (an outermost autocast, a recompute) and owners
//   NumericsState         I4 I5 I8 I9   symbolic metas, stashes and their pairing, checkpoint
//                               extents, what original forwards saw, registration
//
// I2, I6 and I7 are judged within a statement from the events and the machine, and carry
// nothing. Ids are `S::Id`; a "table" keyed by capture is a list of tagged entries (and,
// where an empty entry means something, the list of captures that have one). In the growable
// storage (`explorer run`) the tables that grow with the program are kept by key instead
// (statemachine/grouped_table.hpp), so that each statement costs the same however long the
// program; the flat state keeps the lists it hashes and renames.
#pragma once

#include <cstdint>
#include <type_traits>

#include "explorer/model/symbolic_meta.hpp"
#include "statemachine/storage.hpp"

namespace fp8sm::explorer {

namespace capacity {
FP8SM_CAPACITY(ProgramGrad, 24, "no_grad blocks and grad pushes");
FP8SM_CAPACITY(OpenOwnershipScopes, 8, "open ownership scopes");
FP8SM_CAPACITY(ClosedOwnershipScopes, 24, "ownership scopes closed in one step");
FP8SM_CAPACITY(Owners, 8, "owners in one ownership scope");
FP8SM_CAPACITY(ObservedModules, 8, "modules");
FP8SM_CAPACITY(StashEntries, 32, "stash entries");
FP8SM_CAPACITY(Extents, 24, "checkpoint forwards and recomputes in progress");
FP8SM_CAPACITY(Occurrences, 24, "modules computed by a recompute");
FP8SM_CAPACITY(SeenKeys, 24, "modules of checkpoints' original forwards");
FP8SM_CAPACITY(SeenHistories, 32, "scalings seen by checkpoints' original forwards");
FP8SM_CAPACITY(KeptCheckpoints, 24, "checkpoints keeping a stash");
FP8SM_CAPACITY(KeptEntries, 32, "stash entries kept by checkpoints");
FP8SM_CAPACITY(DroppedCheckpoints, 32, "checkpoints released with a stash");
}  // namespace capacity

template <class S>
struct ProgramGradState {
  // The grad mode the program set, the one before each push innermost last; starts {true}.
  typename S::template List<bool, capacity::ProgramGrad> grad;
};

template <class S>
struct OwnershipState {
  using Id = typename S::Id;
  struct Owner {
    Id node = 0;
    bool live = true;  // its graph may still be backpropagated (not discarded by a `try`)
  };
  struct Scope {
    bool recompute = false;
    bool bit_at_entry = false;
    typename S::template List<Owner, capacity::Owners> owners;
  };
  bool bit_before_event = false;
  typename S::template List<Scope, capacity::OpenOwnershipScopes> open;
  typename S::template List<Scope, capacity::ClosedOwnershipScopes> closed;    // judged at step end
  typename S::template List<Scope, capacity::ClosedOwnershipScopes> revivals;  // F rose inside a scope with these owners
};

template <class S>
struct NumericsState {
  using Id = typename S::Id;
  template <class T, class Tag>
  using List = typename S::template List<T, Tag>;
  static constexpr Id kNone = statemachine::kNone<S>;

  struct Module {
    SymbolicMeta forward;
    SymbolicMeta backward;
    SymbolicMeta saved_for_restore;
    bool registered = false;
    std::uint8_t unused[7] = {0, 0, 0, 0, 0, 0, 0};
  };
  // A module's deque entry (upstream, pr3213), oldest first among those of its module.
  struct StashEntry {
    SymbolicMeta value;
    std::int32_t step = 0;
    Id module = 0;
    Id pushed_by = kNone;  // the checkpoint whose original forward pushed it, or kNone
    std::uint8_t unused[2] = {0, 0};
  };
  // A checkpoint's original forward or a recompute, innermost last.
  struct Extent {
    Id capture = 0;
    bool recompute = false;
  };
  // Of a recompute extent: how many computations of `module` it has seen so far, and the live
  // meta before its first pop. Both sorted by (extent, module).
  struct Occurrence {
    Id extent = 0;
    Id module = 0;
    std::uint16_t count = 0;
  };
  struct BeforePop {
    SymbolicMeta meta;
    Id extent = 0;
    Id module = 0;
    std::uint8_t unused[6] = {0, 0, 0, 0, 0, 0};
  };
  // What checkpoint `capture`'s original forward saw of `module` (its forward history), in order.
  struct SeenKey {
    Id capture = 0;
    Id module = 0;
    bool operator<(const SeenKey& o) const { return capture != o.capture ? capture < o.capture : module < o.module; }
    bool operator==(const SeenKey& o) const { return capture == o.capture && module == o.module; }
  };
  struct Seen {
    std::uint64_t history = 0;
    Id capture = 0;
    Id module = 0;
    std::uint8_t unused[6] = {0, 0, 0, 0, 0, 0};
  };
  // fp8sm: the stash checkpoint `capture` keeps for its recomputes, in order.
  struct Kept {
    SymbolicMeta meta;
    Id capture = 0;
    Id module = 0;
    std::uint8_t unused[6] = {0, 0, 0, 0, 0, 0};
  };

  // The tables whose flat lists are kept in the order of events, not grouped: in the growable
  // storage, the stash by module (a module's deque is its group) and the kept stash by
  // (checkpoint, module) (capture_module_key below; a release reads one key per module).
  using StashTable = std::conditional_t<S::kFlat, List<StashEntry, capacity::StashEntries>,
                                        statemachine::GroupedTable<Id, StashEntry>>;
  using KeptTable = std::conditional_t<S::kFlat, List<Kept, capacity::KeptEntries>,
                                       statemachine::GroupedTable<std::uint64_t, Kept>>;
  // The key of a capture's and module's entries in `seen` (and, growable, `kept`): by capture,
  // then module.
  static std::uint64_t capture_module_key(Id capture, Id module) { return (std::uint64_t{capture} << 32) | module; }

  std::int32_t step = 0;
  std::int32_t fifo_length = 0;  // upstream: captured bits not yet installed by a recompute
  Id installed_from = kNone;     // the checkpoint whose captured bit the next recompute installs
  List<Module, capacity::ObservedModules> modules;  // index = ModuleId
  StashTable stash;
  List<Extent, capacity::Extents> extents;
  List<Occurrence, capacity::Occurrences> occurrences;
  List<BeforePop, capacity::Occurrences> before_pop;
  List<SeenKey, capacity::SeenKeys> seen_keys;  // sorted
  // Grouped by capture_module_key, each key's histories in order.
  typename S::template GroupedList<Seen, capacity::SeenHistories, std::uint64_t> seen;
  List<Id, capacity::KeptCheckpoints> kept_by;  // sorted: the checkpoints with a kept stash (maybe empty)
  KeptTable kept;
  List<Id, capacity::DroppedCheckpoints> dropped;  // sorted: checkpoints the driver released
};

// The flat observers copied list by list (BoundedVector::copy_used_from): the same bytes as an
// assignment, in a few cache lines where the assignment moves kilobytes of empty slots (a
// successor is a copy of its parent). Every member is listed: one added to these structs must
// be added here too. The sizes below stop the build until it is, and
// tests/explorer/test_flat_state.cpp compares the copies' bytes with the assignment's.
static_assert(sizeof(OwnershipState<statemachine::FlatStorage>) == 1068 &&
                  sizeof(NumericsState<statemachine::FlatStorage>) == 4304,
              "a member was added: copy it in copy_used below, then update these sizes");

inline void copy_used(OwnershipState<statemachine::FlatStorage>& to,
                      const OwnershipState<statemachine::FlatStorage>& from) {
  to.bit_before_event = from.bit_before_event;
  to.open.copy_used_from(from.open);
  to.closed.copy_used_from(from.closed);
  to.revivals.copy_used_from(from.revivals);
}

inline void copy_used(NumericsState<statemachine::FlatStorage>& to, const NumericsState<statemachine::FlatStorage>& from) {
  to.step = from.step;
  to.fifo_length = from.fifo_length;
  to.installed_from = from.installed_from;
  to.modules.copy_used_from(from.modules);
  to.stash.copy_used_from(from.stash);
  to.extents.copy_used_from(from.extents);
  to.occurrences.copy_used_from(from.occurrences);
  to.before_pop.copy_used_from(from.before_pop);
  to.seen_keys.copy_used_from(from.seen_keys);
  to.seen.copy_used_from(from.seen);
  to.kept_by.copy_used_from(from.kept_by);
  to.kept.copy_used_from(from.kept);
  to.dropped.copy_used_from(from.dropped);
}

// Everything the observers carry; the search copies and hashes only the parts it checks.
template <class S>
struct ObserverState {
  ProgramGradState<S> program_grad;
  OwnershipState<S> ownership;
  NumericsState<S> numerics;
};

}  // namespace fp8sm::explorer
