#include "statemachine/machine.hpp"

#include <boost/mpl/for_each.hpp>
#include <boost/msm/back/state_machine.hpp>
#include <xxhash.h>

#include "statemachine/encoder.hpp"
#include "statemachine/transition_table.hpp"

namespace fp8sm::statemachine {

namespace {

using Backend = boost::msm::back::state_machine<Fp8StateMachine>;

template <class State>
constexpr int state_id() {
  return boost::msm::back::get_state_id<Backend::stt, State>::value;
}

Hooks& silent_hooks() {
  static Hooks hooks;  // every hook is a no-op by default
  return hooks;
}

// Splits a table row into its components (the action is wrapped in table::Counted).
template <class Row>
struct RowParts;
template <class S, class E, class T, class A, class K, class G>
struct RowParts<boost::msm::front::Row<S, E, T, table::Counted<A, K>, G>> {
  using Key = K;
  static RowDescription describe() {
    return RowDescription{component_name(typeid(S)), component_name(typeid(E)),
                          component_name(typeid(T)), component_name(typeid(A)),
                          component_name(typeid(G))};
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

void Fp8StateMachine::count_row(std::type_index key) {
  const int index = Machine::rows().index_of(key);
  if (index >= 0) ++(*coverage)[static_cast<std::size_t>(index)];
}

struct Machine::Impl {
  Backend fsm;
};

Machine::Machine(spec::Semantics semantics, Hooks* hooks) : impl_(std::make_unique<Impl>()) {
  impl_->fsm.data.semantics = semantics;
  impl_->fsm.hooks_ = hooks != nullptr ? hooks : &silent_hooks();
  impl_->fsm.start();
}

Machine::Machine(const Machine& other) : impl_(std::make_unique<Impl>(*other.impl_)) {}

Machine& Machine::operator=(const Machine& other) {
  // Assigned in place: the data's vectors keep their storage (the explorer recycles states).
  if (this != &other) *impl_ = *other.impl_;
  return *this;
}

Machine::~Machine() = default;

template <class Event>
std::optional<spec::RaisedException> Machine::fire(const Event& event) {
  impl_->fsm.data.error.reset();
  impl_->fsm.process_event(event);
  return std::move(impl_->fsm.data.error);
}

template std::optional<spec::RaisedException> Machine::fire(const spec::AutocastEnter&);
template std::optional<spec::RaisedException> Machine::fire(const spec::AutocastExit&);
template std::optional<spec::RaisedException> Machine::fire(const spec::GradPush&);
template std::optional<spec::RaisedException> Machine::fire(const spec::GradPop&);
template std::optional<spec::RaisedException> Machine::fire(const spec::CheckpointForwardEnter&);
template std::optional<spec::RaisedException> Machine::fire(const spec::CheckpointForwardExit&);
template std::optional<spec::RaisedException> Machine::fire(const spec::RecomputeEnter&);
template std::optional<spec::RaisedException> Machine::fire(const spec::RecomputeExit&);
template std::optional<spec::RaisedException> Machine::fire(const spec::ModulePrepare&);
template std::optional<spec::RaisedException> Machine::fire(const spec::ModuleClaim&);
template std::optional<spec::RaisedException> Machine::fire(const spec::ModuleEndForward&);
template std::optional<spec::RaisedException> Machine::fire(const spec::ModuleBackwardBegin&);
template std::optional<spec::RaisedException> Machine::fire(const spec::SavedTensorUnpack&);
template std::optional<spec::RaisedException> Machine::fire(const spec::ModuleBackward&);
template std::optional<spec::RaisedException> Machine::fire(const spec::BackwardPassBegin&);
template std::optional<spec::RaisedException> Machine::fire(const spec::BackwardPassEnd&);
template std::optional<spec::RaisedException> Machine::fire(const spec::CheckpointReleased&);

void Machine::set_hooks(Hooks* hooks) { impl_->fsm.hooks_ = hooks != nullptr ? hooks : &silent_hooks(); }

void Machine::record_coverage(std::vector<std::uint64_t>* counts) {
  if (counts != nullptr) counts->resize(rows().rows().size(), 0);
  impl_->fsm.coverage = counts;
}

spec::Semantics Machine::semantics() const { return impl_->fsm.data.semantics; }

bool Machine::ownership_available() const {
  return impl_->fsm.current_state()[kOwnershipRegion] == state_id<states::OwnershipAvailable>();
}

CheckpointPhase Machine::checkpoint_phase() const {
  const int s = impl_->fsm.current_state()[kCheckpointRegion];
  if (s == state_id<states::InOriginalForward>()) return CheckpointPhase::OriginalForward;
  if (s == state_id<states::InRecompute>()) return CheckpointPhase::Recompute;
  return CheckpointPhase::Outside;
}

bool Machine::fp8_enabled() const {
  return impl_->fsm.current_state()[kAutocastRegion] == state_id<states::Fp8Autocast>();
}

bool Machine::grad_enabled() const {
  return impl_->fsm.current_state()[kGradRegion] == state_id<states::GradEnabled>();
}

// upstream only: TE 2.20.2 added the early return; the PR head (pr3213) predates it, and fp8sm
// keeps its own checkpoint bookkeeping under no_grad (docs/semantics.md).
bool Machine::checkpoint_call_is_plain() const {
  return semantics() == spec::Semantics::Upstream && !grad_enabled();
}

int Machine::autocast_depth() const { return static_cast<int>(impl_->fsm.data.autocasts.size()); }

const MachineData& Machine::data() const { return impl_->fsm.data; }

ModuleFlags Machine::module(ModuleId m) const {
  return impl_->fsm.data.module_flags(m);
}

std::string Machine::snapshot() const {
  Encoder encoder;
  encode(encoder);
  std::string out;
  encoder.finish(out);
  return out;
}

void Machine::encode(Encoder& out) const {
  const MachineData& d = impl_->fsm.data;
  for (int r = 0; r < 4; ++r) put(out, static_cast<std::uint64_t>(impl_->fsm.current_state()[r]), 1);
  put(out, static_cast<std::uint64_t>(d.semantics), 1);
  put(out, d.bit_at_autocast_entry.size(), 2);
  for (bool b : d.bit_at_autocast_entry) put(out, b, 1);
  put(out, d.ownership_frames.size(), 2);
  for (const auto& f : d.ownership_frames) {
    put(out, f.bit_before, 1);
    out.put_id(IdKind::Capture, f.capture);
  }
  put(out, d.fifo.size(), 2);
  for (const auto& e : d.fifo) {
    put(out, e.bit, 1);
    out.put_id(IdKind::Capture, e.capture);
  }
  for (CaptureId c = 0; c < d.captures.size(); ++c) {
    out.begin_keyed(IdKind::Capture, c);
    put(out, 0, 1);  // the capture record of c
    put(out, static_cast<std::uint64_t>(d.captures[c].bit) * 2u + d.captures[c].completed, 1);
    out.end_keyed();
  }
  put(out, d.checkpoint_frames.size(), 2);
  for (const auto& f : d.checkpoint_frames) {
    put(out, static_cast<std::uint64_t>(f.before) | (f.recompute << 2), 1);
    out.put_id(IdKind::Capture, f.capture);
    put(out, f.replayed.size(), 2);
    for (ModuleId m : f.replayed) put(out, m, 2);
  }
  for (CaptureId c = 0; c < d.checkpoint_stash.size(); ++c) {
    out.begin_keyed(IdKind::Capture, c);
    put(out, 1, 1);  // the stash, not the capture record, of c
    put(out, d.checkpoint_stash[c].size(), 2);
    for (const auto& run : d.checkpoint_stash[c]) put(out, run.module | (static_cast<std::uint64_t>(run.fp8) << 16), 3);
    out.end_keyed();
  }
  put(out, d.autocasts.size(), 2);
  for (const auto& a : d.autocasts) put(out, static_cast<std::uint64_t>(a.mode_before) * 2u + a.recompute_internal, 1);
  put(out, d.grad_frames.size(), 2);
  for (const auto& g : d.grad_frames) put(out, g.grad_before | (g.user_grad_before << 1), 1);
  put(out, d.user_grad, 1);
  put(out, d.fp8_backwards_in_pass, 2);
  put(out, d.modules.size(), 2);
  for (const auto& m : d.modules) {
    put(out, m.fp8 | (m.registered << 1) | (m.has_stash_pos << 2) | (m.has_saved_for_restore << 3) |
                 (m.restore_pending << 4),
        1);
    put(out, m.stash_depth, 2);
  }
}

std::uint64_t Machine::fingerprint() const {
  const std::string bytes = snapshot();
  return XXH3_64bits(bytes.data(), bytes.size());
}

const RowCatalogue& Machine::rows() {
  static const RowCatalogue catalogue = [] {
    RowCatalogue c;
    boost::mpl::for_each<table::AllRows>(AddRow{&c});
    return c;
  }();
  return catalogue;
}

}  // namespace fp8sm::statemachine
