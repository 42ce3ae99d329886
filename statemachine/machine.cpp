#include "statemachine/machine.hpp"

#include <boost/mpl/at.hpp>
#include <boost/mpl/for_each.hpp>
#include <boost/mpl/size.hpp>
#include <boost/msm/back/state_machine.hpp>
#include <xxhash.h>

#include <type_traits>
#include <utility>

#include "statemachine/encoder.hpp"
#include "statemachine/transition_table.hpp"

namespace fp8sm::statemachine {

namespace {

template <class S>
using Backend = boost::msm::back::state_machine<Fp8StateMachine<S>>;

template <class S, class State>
constexpr int state_id() {
  return boost::msm::back::get_state_id<typename Backend<S>::stt, State>::value;
}

// Whether `state`'s region of State (states.hpp) is in State.
template <class State, class S>
bool in_state(const MachineState<S>& state) {
  return state.regions[State::kRegion] == state_id<S, State>();
}

Hooks& silent_hooks() {
  static Hooks hooks;  // every hook is a no-op by default
  return hooks;
}

// Boost.MSM numbers the regions in the order of their initial states (transition_table.hpp):
// states.hpp's Region of each must be that number.
template <class InitialStates, std::size_t... region>
constexpr bool regions_numbered_as_the_table(std::index_sequence<region...>) {
  return ((boost::mpl::at_c<InitialStates, region>::type::kRegion == static_cast<int>(region)) && ...);
}
static_assert(regions_numbered_as_the_table<Fp8StateMachine<GrowableStorage>::initial_state>(
                  std::make_index_sequence<boost::mpl::size<Fp8StateMachine<GrowableStorage>::initial_state>::value>{}),
              "states.hpp's regions are numbered as the table's initial states");

// A guard that reads only the semantics has holds_under(Semantics) (FP8SM_SEMANTICS_GUARD).
template <class G, class = void>
struct ReadsOnlySemantics : std::false_type {};
template <class G>
struct ReadsOnlySemantics<G, std::void_t<decltype(G::holds_under(spec::Semantics{}))>> : std::true_type {};

// A guard's formula, from its type: a named guard, or none / And_ / Or_ / Not_ over others.
template <class G>
struct GuardParts {
  static GuardTree describe() {
    GuardTree tree;
    tree.kind = GuardTree::Kind::Guard;
    tree.name = component_name(typeid(G));
    if constexpr (ReadsOnlySemantics<G>::value) {
      tree.reads_only_semantics = true;
      for (spec::Semantics s : spec::kAllSemantics) tree.holds_under[static_cast<std::size_t>(s)] = G::holds_under(s);
    }
    return tree;
  }
};
template <>
struct GuardParts<boost::msm::front::none> {
  static GuardTree describe() { return GuardTree{}; }
};
GuardTree combination(GuardTree::Kind kind, std::vector<GuardTree> operands) {
  GuardTree tree;
  tree.kind = kind;
  tree.operands = std::move(operands);
  return tree;
}
template <class A>
struct GuardParts<table::Not_<A>> {
  static GuardTree describe() { return combination(GuardTree::Kind::Not, {GuardParts<A>::describe()}); }
};
template <class A, class B>
struct GuardParts<table::And_<A, B>> {
  static GuardTree describe() {
    return combination(GuardTree::Kind::And, {GuardParts<A>::describe(), GuardParts<B>::describe()});
  }
};
template <class A, class B>
struct GuardParts<table::Or_<A, B>> {
  static GuardTree describe() {
    return combination(GuardTree::Kind::Or, {GuardParts<A>::describe(), GuardParts<B>::describe()});
  }
};

// Splits a table row into its components (the action is wrapped in table::Counted).
template <class Row>
struct RowParts;
template <class S, class E, class T, class A, class K, class G>
struct RowParts<boost::msm::front::Row<S, E, T, table::Counted<A, K>, G>> {
  using Key = K;
  static RowDescription describe() {
    return RowDescription{component_name(typeid(S)), component_name(typeid(E)),
                          component_name(typeid(T)), component_name(typeid(A)),
                          component_name(typeid(G)), GuardParts<G>::describe(),
                          S::kRegion};
  }
};

struct AddRow {
  RowCatalogue* catalogue;
  template <class Row>
  void operator()(Row) const {
    catalogue->add(std::type_index(typeid(typename RowParts<Row>::Key)), RowParts<Row>::describe());
  }
};

}  // namespace

template <class S>
template <class Key>
void Fp8StateMachine<S>::count_row() {
  // Looked up once per row: the search records every row it takes with --coverage.
  static const int index = Machine::rows().index_of(std::type_index(typeid(Key)));
  if (index < 0) return;
  if (coverage != nullptr) ++(*coverage)[static_cast<std::size_t>(index)];
  if (rows_taken != nullptr) rows_taken->push_back(static_cast<std::uint16_t>(index));
}

template <class S>
struct BasicMachine<S>::Impl {
  Backend<S> fsm;
  MachineState<S> own;  // the state of an owning machine
};

template <class S>
MachineState<S> BasicMachine<S>::initial_state(spec::Semantics semantics) {
  MachineState<S> state;
  boost::mpl::for_each<typename Fp8StateMachine<S>::initial_state>([&](auto initial) {
    using State = decltype(initial);
    state.regions[State::kRegion] = static_cast<std::uint8_t>(state_id<S, State>());
  });
  state.data.semantics = semantics;
  return state;
}

template <class S>
BasicMachine<S>::BasicMachine(spec::Semantics semantics, Hooks* hooks) : impl_(std::make_unique<Impl>()) {
  impl_->own = initial_state(semantics);
  state_ = &impl_->own;
  impl_->fsm.data_ = &state_->data;
  impl_->fsm.hooks_ = hooks != nullptr ? hooks : &silent_hooks();
  impl_->fsm.start();
}

template <class S>
BasicMachine<S>::BasicMachine(MachineState<S>& state, Hooks* hooks)
    : BasicMachine(state.data.semantics, hooks) {
  bind(state);
}

template <class S>
BasicMachine<S>::BasicMachine(const BasicMachine& other) : impl_(std::make_unique<Impl>(*other.impl_)) {
  impl_->own = *other.state_;
  state_ = &impl_->own;
  impl_->fsm.data_ = &state_->data;
}

template <class S>
BasicMachine<S>& BasicMachine<S>::operator=(const BasicMachine& other) {
  // Copied into the state this machine works on: its lists keep their storage.
  if (this != &other) *state_ = *other.state_;
  return *this;
}

template <class S>
BasicMachine<S>::~BasicMachine() = default;

template <class S>
void BasicMachine<S>::bind(MachineState<S>& state) {
  state_ = &state;
  impl_->fsm.data_ = &state.data;
}

// The back-end keeps the region states of the event it processes; between events they are the
// state's. Writing them through current_state() is writing the back-end's own (non-const) array.
template <class S>
template <class Event>
std::optional<spec::RaisedException> BasicMachine<S>::fire(const Event& event) {
  Backend<S>& fsm = impl_->fsm;
  MachineState<S>& state = *state_;
  int* regions = const_cast<int*>(fsm.current_state());
  for (int r = 0; r < 4; ++r) regions[r] = state.regions[r];
  state.data.error.reset();
  fsm.process_event(event);
  for (int r = 0; r < 4; ++r) state.regions[r] = static_cast<std::uint8_t>(regions[r]);
  std::optional<spec::RaisedException> raised = state.data.error;
  state.data.error.reset();
  return raised;
}

#define FP8SM_FIRE(S, EVENT) \
  template std::optional<spec::RaisedException> BasicMachine<S>::fire(const spec::EVENT&);
#define FP8SM_FIRE_ALL(S)                       \
  FP8SM_FIRE(S, AutocastEnter)                  \
  FP8SM_FIRE(S, AutocastExit)                   \
  FP8SM_FIRE(S, GradPush)                       \
  FP8SM_FIRE(S, GradPop)                        \
  FP8SM_FIRE(S, CheckpointForwardEnter)         \
  FP8SM_FIRE(S, CheckpointForwardExit)          \
  FP8SM_FIRE(S, RecomputeEnter)                 \
  FP8SM_FIRE(S, RecomputeExit)                  \
  FP8SM_FIRE(S, ModulePrepare)                  \
  FP8SM_FIRE(S, ModuleClaim)                    \
  FP8SM_FIRE(S, ModuleEndForward)               \
  FP8SM_FIRE(S, ModuleBackwardBegin)            \
  FP8SM_FIRE(S, SavedTensorUnpack)              \
  FP8SM_FIRE(S, ModuleBackward)                 \
  FP8SM_FIRE(S, BackwardPassBegin)              \
  FP8SM_FIRE(S, BackwardPassEnd)                \
  FP8SM_FIRE(S, CheckpointReleased)

template <class S>
void BasicMachine<S>::set_hooks(Hooks* hooks) {
  impl_->fsm.hooks_ = hooks != nullptr ? hooks : &silent_hooks();
}

template <class S>
void BasicMachine<S>::record_coverage(std::vector<std::uint64_t>* counts) {
  if (counts != nullptr) counts->resize(rows().rows().size(), 0);
  impl_->fsm.coverage = counts;
}

template <class S>
void BasicMachine<S>::record_rows(std::vector<std::uint16_t>* rows) {
  impl_->fsm.rows_taken = rows;
}

template <class S>
bool BasicMachine<S>::ownership_available() const {
  return in_state<states::OwnershipAvailable>(*state_);
}

template <class S>
CheckpointPhase BasicMachine<S>::checkpoint_phase() const {
  if (in_state<states::InOriginalForward>(*state_)) return CheckpointPhase::OriginalForward;
  if (in_state<states::InRecompute>(*state_)) return CheckpointPhase::Recompute;
  return CheckpointPhase::Outside;
}

template <class S>
bool BasicMachine<S>::fp8_enabled() const {
  return in_state<states::Fp8Autocast>(*state_);
}

template <class S>
bool BasicMachine<S>::grad_enabled() const {
  return in_state<states::GradEnabled>(*state_);
}

// upstream only: TE 2.20.2 added the early return; the PR head (pr3213) predates it, and fp8sm
// keeps its own checkpoint bookkeeping under no_grad (docs/semantics.md).
template <class S>
bool BasicMachine<S>::checkpoint_call_is_plain() const {
  return semantics() == spec::Semantics::Upstream && !grad_enabled();
}

// upstream only: TE 2.20.2's `_CheckpointFunction.forward` enters its
// activation_recompute_forward only `if any(ctx.needs_input_grad)` (else a nullcontext, so a
// nested checkpoint inherits an enclosing recompute phase); the PR head (pr3213) enters it
// always, and so does fp8sm, whose capture is then never recomputed and is released at once.
template <class S>
bool BasicMachine<S>::reentrant_forward_skips_arf(bool input_requires_grad) const {
  return semantics() == spec::Semantics::Upstream && !input_requires_grad;
}

template <class S>
std::string BasicMachine<S>::snapshot() const {
  Encoder encoder;
  encode(encoder);
  std::string out;
  encoder.finish(out);
  return out;
}

namespace {

// How encode() writes each field of for_each_field's list: a number in as many bytes as it
// has, a list as its size (2 bytes) and its elements, captures as ids, and the tables keyed by
// a capture as keyed entries (see Encoder).
template <class S>
struct SnapshotWriter {
  using Data = MachineData<S>;
  Encoder& out;
  const Data& d;

  void operator()(const std::uint8_t (&regions)[4]) const {
    for (std::uint8_t r : regions) put(out, r, 1);
  }
  void operator()(spec::Semantics semantics) const { put(out, static_cast<std::uint64_t>(semantics), 1); }
  // A number, or a list.
  template <class Field>
  void operator()(const Field& field) const {
    if constexpr (std::is_integral_v<Field>) {
      put(out, field, sizeof field);
    } else {
      put(out, field.size(), 2);
      for (const auto& e : field) element(e);
    }
  }
  void operator()(const typename Data::template List<CaptureRecord, capacity::CaptureRecords>& captures) const {
    for (CaptureId c = 0; c < captures.size(); ++c) {
      out.begin_keyed(IdKind::Capture, c);
      put(out, 0, 1);  // the capture record of c
      put(out, static_cast<std::uint64_t>(captures[c].bit) * 2u + captures[c].completed, 1);
      out.end_keyed();
    }
  }
  void operator()(const typename Data::template List<typename Data::CheckpointFrame, capacity::CheckpointFrames>& frames,
                  const typename Data::ReplayedRuns& replayed) const {
    put(out, frames.size(), 2);
    for (std::size_t i = 0; i < frames.size(); ++i) {
      const auto& f = frames[i];
      put(out, static_cast<std::uint64_t>(f.before) | (f.recompute << 2), 1);
      out.put_id(IdKind::Capture, f.capture);
      const auto count = std::count_if(replayed.begin(), replayed.end(), [&](const auto& r) { return r.frame == i; });
      put(out, static_cast<std::uint64_t>(count), 2);
      for (const auto& r : replayed) {
        if (r.frame == i) put(out, r.module, 2);
      }
    }
  }
  void operator()(typename Data::Id stash_slots, const typename Data::StashedRuns&) const {
    for (CaptureId c = 0; c < stash_slots; ++c) {
      out.begin_keyed(IdKind::Capture, c);
      put(out, 1, 1);  // the stash, not the capture record, of c
      const auto [first, last] = d.stash_of(c);
      put(out, static_cast<std::uint64_t>(last - first), 2);
      for (auto run = first; run != last; ++run) put(out, run->module | (static_cast<std::uint64_t>(run->fp8) << 16), 3);
      out.end_keyed();
    }
  }

  void element(bool b) const { put(out, b, 1); }
  void element(const typename Data::OwnershipFrame& f) const {
    put(out, f.bit_before, 1);
    out.put_id(IdKind::Capture, f.capture);
  }
  void element(const typename Data::FifoEntry& e) const {
    put(out, e.bit, 1);
    out.put_id(IdKind::Capture, e.capture);
  }
  void element(const typename Data::AutocastFrame& a) const {
    put(out, static_cast<std::uint64_t>(a.mode_before) * 2u + a.recompute_internal, 1);
  }
  void element(const typename Data::GradFrame& g) const { put(out, g.grad_before | (g.user_grad_before << 1), 1); }
  void element(const ModuleFlags& m) const {
    put(out,
        m.fp8 | (m.registered << 1) | (m.has_stash_pos << 2) | (m.has_saved_for_restore << 3) | (m.restore_pending << 4),
        1);
    put(out, m.stash_depth, 2);
  }
};

}  // namespace

template <class S>
void BasicMachine<S>::encode(Encoder& out) const {
  for_each_field(*state_, SnapshotWriter<S>{out, state_->data});
}

template <class S>
std::uint64_t BasicMachine<S>::fingerprint() const {
  const std::string bytes = snapshot();
  return XXH3_64bits(bytes.data(), bytes.size());
}

template <class S>
const RowCatalogue& BasicMachine<S>::rows() {
  static const RowCatalogue catalogue = [] {
    RowCatalogue c;
    boost::mpl::for_each<table::AllRows>(AddRow{&c});
    return c;
  }();
  return catalogue;
}

template struct Fp8StateMachine<GrowableStorage>;
template struct Fp8StateMachine<FlatStorage>;
template class BasicMachine<GrowableStorage>;
template class BasicMachine<FlatStorage>;
FP8SM_FIRE_ALL(GrowableStorage)
FP8SM_FIRE_ALL(FlatStorage)

}  // namespace fp8sm::statemachine
