// The autograd tape and the checkpoint ledger, as the driver keeps them for the scenario
// interpreter and the runtime alike (docs/scenarios.md "Graph"): nodes in recording order
// (backward visits them in reverse), a reentrant checkpoint's record, a non-reentrant
// checkpoint's frame with the slots its recompute filled. What a host attaches to them (a
// node's backward function and saved tensors, a checkpoint's body) is its `Traits`' payload;
// the driver only moves it around.
//
// All of it is the driver's state (DriverState): plain data over the host's storage
// (statemachine/storage.hpp), so that the exhaustive search can keep it inside a flat value.
// Ids and positions are `Id`s (kNone: none).
#pragma once

#include <cstdint>

#include "spec/events.hpp"
#include "statemachine/storage.hpp"

namespace fp8sm::driver {

using spec::CaptureId;
using spec::ModuleId;
using NodeId = std::uint32_t;

// The driver's lists and their capacities in the flat state (FP8SM_CAPACITY, statemachine/storage.hpp;
// why these numbers: docs/explorer.md, *Capacities*).
namespace capacity {
FP8SM_CAPACITY(GraphNodes, 16, "autograd nodes in one graph");
FP8SM_CAPACITY(Tapes, 1, "saved tapes");
FP8SM_CAPACITY(Records, 24, "reentrant checkpoint records");
FP8SM_CAPACITY(Frames, 24, "non-reentrant checkpoint frames");
FP8SM_CAPACITY(RecomputedSlots, 24, "saved-tensor slots filled by non-reentrant recomputes");
FP8SM_CAPACITY(PackTargets, 24, "nested saved-tensor hooks");
FP8SM_CAPACITY(ReleasedFlags, 48, "checkpoint ids");
FP8SM_CAPACITY(Recomputes, 16, "recomputes in progress");
}  // namespace capacity

template <class Traits>
struct Node {
  using Id = typename Traits::Storage::Id;
  static constexpr Id kNone = statemachine::kNone<typename Traits::Storage>;
  enum class Kind : std::uint8_t { Module, Function, Checkpoint };
  Kind kind = Kind::Module;
  bool fp8 = false;           // Module: its meta is FP8 (m.fp8 when recorded)
  bool owner = false;         // Module: the saved reduce_and_update_bwd_fp8_tensors flag
  bool backward_ran = false;  // Module: its backward completed once (a retained graph keeps the node)
  bool freed = false;         // its backward completed in a pass without retain: torch released
                              // what it saved (and TE's Linear dropped its backward objects)
  Id id = 0;
  Id module = 0;              // Module
  Id reentrant = kNone;       // Checkpoint: position of its ReentrantRecord
  Id frame = kNone;           // the non-reentrant frame whose hook packed what it saved, or kNone
  Id slot = 0;                // its slot in that frame
  typename Traits::NodePayload payload{};
};

template <class Traits>
struct Graph {
  using Id = typename Traits::Storage::Id;
  using Nodes = typename Traits::Storage::template List<Node<Traits>, capacity::GraphNodes>;
  Nodes nodes;
  // Tells graphs apart after `save` replaced the current one; kNone for a tape never saved
  // (one that a backward or a later tape's save named first).
  Id generation = statemachine::kNone<typename Traits::Storage>;
  // Whether a pass without retain went over it is not kept: what that pass released is in its
  // nodes' `freed`, and nothing reads more (a whole-graph flag split the search's states).
  bool live = true;  // false for a non-reentrant recompute's graph
};

// A reentrant checkpoint's node: its recompute runs `body` at the node's turn in backward.
template <class Traits>
struct ReentrantRecord {
  typename Traits::Body body{};
  typename Traits::Storage::Id capture = 0;
  bool fp8 = false;  // ctx_fp8: fp8_enabled read after the original forward
};

// One slot a non-reentrant frame's recompute filled: what the recompute's node saved.
template <class Traits>
struct RecomputedSlot {
  bool taken = false;  // an unpack took it (TE leaves None behind)
  typename Traits::NodePayload twin{};
};

// A non-reentrant checkpoint (TE's _CheckpointFrame with its saved-tensor hooks, spec §3.5).
// Its nodes are those recorded while it is the innermost non-reentrant checkpoint open; each
// saves through the frame's hook, numbered in recording order (its slot). The first unpack of
// a slot while its recomputed slots are none recomputes the body, whose own nodes save again
// into `recomputed_count` slots from `recomputed_begin` of the driver's slot list (a frame's
// recompute fills them one after the other: recomputes never nest); each unpack then takes
// its slot.
template <class Traits>
struct NonReentrantFrame {
  using Id = typename Traits::Storage::Id;
  typename Traits::Body body{};  // set when the checkpoint's forward ends
  Id capture = 0;
  bool fp8 = false;     // fp8_enabled read before the body
  bool closed = false;  // its forward has ended
  Id live_nodes = 0;    // its own nodes, not yet dropped
  Id slots = 0;         // frame.count: slots numbered by the original forward
  Id recomputed_begin = 0;
  Id recomputed_count = 0;  // len(frame.recomputed)
};

// Where a node's saved tensors go (torch's saved-tensor hooks, innermost only): into the
// slots of a non-reentrant checkpoint's original forward, or into what its recompute saves.
template <class Traits>
struct PackTarget {
  typename Traits::Storage::Id frame = 0;
  bool recompute = false;
};

// Everything the driver keeps between two operations (and, transiently, during one).
template <class Traits>
struct DriverState {
  using S = typename Traits::Storage;
  using Id = typename S::Id;
  template <class T, class Tag>
  using List = typename S::template List<T, Tag>;

  Graph<Traits> step_graph{{}, 1, true};  // the current graph of the step
  List<Graph<Traits>, capacity::Tapes> tapes;     // index = tape name
  Id next_generation = 2;
  List<ReentrantRecord<Traits>, capacity::Records> records;
  List<NonReentrantFrame<Traits>, capacity::Frames> frames;
  List<RecomputedSlot<Traits>, capacity::RecomputedSlots> recomputed_slots;
  List<PackTarget<Traits>, capacity::PackTargets> packs;  // innermost last
  Id next_capture = 0;
  List<bool, capacity::ReleasedFlags> released;  // per capture, from released_base
  Id released_base = 0;
  Id next_node = 0;
  List<Id, capacity::Recomputes> recomputing;  // recomputes in progress, innermost last
  std::uint8_t last_claim = 0;                 // the claim just fired: 0 none, 1 not owner, 2 owner
};

}  // namespace fp8sm::driver
