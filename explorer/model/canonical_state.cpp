#include "explorer/model/canonical_state.hpp"

#include <algorithm>
#include <type_traits>

namespace fp8sm::explorer {

namespace {

using Id = FlatStorage::Id;
constexpr Id kNone = statemachine::kNone<FlatStorage>;
using Model = interpreter::InterpreterState<FlatStorage>;
using DriverState = driver::DriverState<interpreter::ModelTraits<FlatStorage>>;
using Graph = driver::Graph<interpreter::ModelTraits<FlatStorage>>;

// A set of ids below 255 (kNone is never an element), and each element's rank in it, looked up
// in a table built once the set is complete.
class IdSet {
 public:
  void add(Id id) {
    if (id != kNone) words_[id >> 6] |= std::uint64_t{1} << (id & 63u);
    ready_ = false;
  }
  bool has(Id id) const { return id != kNone && (words_[id >> 6] >> (id & 63u) & 1u) != 0; }
  // An element's new name: how many elements are below it.
  Id rank(Id id) {
    if (id == kNone) return kNone;
    if (!ready_) build();
    return rank_[id];
  }
  // Whether the set is {0, ..., k - 1} for some k, and that k: renaming it changes nothing.
  bool is_prefix(std::size_t& k) const {
    std::size_t w = 0;
    while (w < 4 && words_[w] == ~std::uint64_t{0}) ++w;
    if (w == 4) {
      k = 256;
      return true;
    }
    const std::uint64_t rest = words_[w];
    const unsigned zero = static_cast<unsigned>(__builtin_ctzll(~rest));  // the first id missing
    if ((rest >> zero) != 0) return false;
    for (std::size_t v = w + 1; v < 4; ++v) {
      if (words_[v] != 0) return false;
    }
    k = w * 64 + zero;
    return true;
  }
  // How many elements are below `bound` (which need not be one).
  Id count_below(std::size_t bound) const {
    unsigned below = 0;
    for (std::size_t id = 0; id < bound; ++id) below += has(static_cast<Id>(id)) ? 1u : 0u;
    return static_cast<Id>(below);
  }

 private:
  void build() {
    Id next = 0;
    for (unsigned w = 0; w < 4; ++w) {
      for (std::uint64_t bits = words_[w]; bits != 0; bits &= bits - 1) {
        rank_[w * 64 + static_cast<unsigned>(__builtin_ctzll(bits))] = next++;
      }
    }
    ready_ = true;
  }
  std::uint64_t words_[4] = {0, 0, 0, 0};
  bool ready_ = false;
  Id rank_[256];  // valid for elements once ready_
};

template <class F>
void for_each_graph(DriverState& d, F&& f) {
  f(d.step_graph);
  for (Graph& g : d.tapes) f(g);
}

// Keeps the entries whose `key(entry)` is in `set`, renamed; order is kept (ranks keep order).
template <class List, class Key>
void keep_mentioned(List& list, IdSet& set, Key key) {
  std::size_t kept = 0;
  for (std::size_t i = 0; i < list.size(); ++i) {
    Id& id = key(list[i]);
    if (!set.has(id)) continue;
    id = set.rank(id);
    list[kept++] = list[i];
  }
  list.resize(kept);
}

// A dense table indexed by id: entries of mentioned ids, in id order, at their new index.
template <class List>
void keep_dense(List& table, const IdSet& set) {
  std::size_t kept = 0;
  for (std::size_t i = 0; i < table.size(); ++i) {
    if (set.has(static_cast<Id>(i))) table[kept++] = table[i];
  }
  table.resize(kept);
}

// The driver's records and frames that a node or a block names, at their rank.
void compact_records_and_frames(Model& m) {
  DriverState& d = m.driver;
  IdSet records, frames;
  for_each_graph(d, [&](Graph& g) {
    for (const auto& node : g.nodes) {
      records.add(node.reentrant);
      frames.add(node.frame);
    }
  });
  for (const auto& scope : m.scopes) frames.add(scope.call.frame);
  for (const auto& pack : d.packs) frames.add(pack.frame);  // the open blocks' frames again
  std::size_t mentioned_records = 0, mentioned_frames = 0;
  if (records.is_prefix(mentioned_records) && mentioned_records == d.records.size() &&
      frames.is_prefix(mentioned_frames) && mentioned_frames == d.frames.size()) {
    return;  // every record and frame is named: nothing to drop or rename
  }

  std::size_t kept = 0;
  for (std::size_t i = 0; i < d.records.size(); ++i) {
    if (records.has(static_cast<Id>(i))) d.records[kept++] = d.records[i];
  }
  d.records.resize(kept);
  // Frames, and the recomputed slots of those kept.
  decltype(d.recomputed_slots) slots;
  kept = 0;
  for (std::size_t i = 0; i < d.frames.size(); ++i) {
    if (!frames.has(static_cast<Id>(i))) continue;
    auto frame = d.frames[i];
    const std::size_t begin = frame.recomputed_begin;
    frame.recomputed_begin = static_cast<Id>(slots.size());
    for (std::size_t k = 0; k < frame.recomputed_count; ++k) slots.push_back(d.recomputed_slots[begin + k]);
    d.frames[kept++] = frame;
  }
  d.frames.resize(kept);
  d.recomputed_slots = slots;

  for_each_graph(d, [&](Graph& g) {
    for (auto& node : g.nodes) {
      node.reentrant = records.rank(node.reentrant);
      node.frame = frames.rank(node.frame);
    }
  });
  for (auto& scope : m.scopes) scope.call.frame = frames.rank(scope.call.frame);
  for (auto& pack : d.packs) pack.frame = frames.rank(pack.frame);
}

// Adds every capture the run mentions (a frame, a FIFO entry, an open checkpoint, a record, a
// stash entry, ...) to `captures`, an IdSet or a SmallIdSet. The keyed tables (captures,
// stash runs, released, the numerics' seen/kept/dropped lists) are not mentions: an entry of
// a capture nothing mentions is dead and dropped.
template <class Set>
void add_capture_mentions(const RunState& run, const CheckedObservers& carried, Set& captures) {
  const Model& m = run.model;
  const DriverState& d = m.driver;
  const auto& md = m.machine.data;
  for (const auto& f : md.ownership_frames) captures.add(f.capture);
  for (const auto& e : md.fifo) captures.add(e.capture);
  for (const auto& f : md.checkpoint_frames) captures.add(f.capture);
  for (const auto& scope : m.scopes) {
    if (spec::is_checkpoint(scope.op)) captures.add(scope.call.capture);
  }
  captures.add(d.next_capture);
  for (const auto& r : d.records) captures.add(r.capture);
  for (const auto& f : d.frames) captures.add(f.capture);
  if (carried.numerics) {
    const NumericsState<FlatStorage>& n = run.observers.numerics;
    for (const auto& e : n.stash) captures.add(e.pushed_by);
    for (const auto& e : n.extents) captures.add(e.capture);
    captures.add(n.installed_from);
  }
}

// Whether every keyed table holds only entries of captures below `k`: with the mentions
// {0, ..., k - 1}, there is nothing to drop or rename (a statement that neither creates nor
// drops a checkpoint).
bool keyed_tables_within(const RunState& run, const CheckedObservers& carried, std::size_t k) {
  const auto& md = run.model.machine.data;
  const DriverState& d = run.model.driver;
  auto below = [k](Id id) { return id < k; };
  if (md.captures.size() > k || md.stash_slots > k || d.released.size() > k) return false;
  if (!std::all_of(md.stash_runs.begin(), md.stash_runs.end(), [&](const auto& r) { return below(r.capture); })) return false;
  if (!carried.numerics) return true;
  const NumericsState<FlatStorage>& n = run.observers.numerics;
  return std::all_of(n.seen_keys.begin(), n.seen_keys.end(), [&](const auto& x) { return below(x.capture); }) &&
         std::all_of(n.seen.begin(), n.seen.end(), [&](const auto& x) { return below(x.capture); }) &&
         std::all_of(n.kept_by.begin(), n.kept_by.end(), below) &&
         std::all_of(n.kept.begin(), n.kept.end(), [&](const auto& x) { return below(x.capture); }) &&
         std::all_of(n.dropped.begin(), n.dropped.end(), below);
}

void rename_captures(RunState& run, const CheckedObservers& carried) {
  Model& m = run.model;
  DriverState& d = m.driver;
  auto& md = m.machine.data;
  NumericsState<FlatStorage>& n = run.observers.numerics;

  IdSet captures;
  add_capture_mentions(run, carried, captures);
  std::size_t mentioned = 0;
  if (captures.is_prefix(mentioned) && keyed_tables_within(run, carried, mentioned)) return;

  // Mentions.
  for (auto& f : md.ownership_frames) f.capture = captures.rank(f.capture);
  for (auto& e : md.fifo) e.capture = captures.rank(e.capture);
  for (auto& f : md.checkpoint_frames) f.capture = captures.rank(f.capture);
  for (auto& scope : m.scopes) {
    if (spec::is_checkpoint(scope.op)) scope.call.capture = captures.rank(scope.call.capture);
  }
  d.next_capture = captures.rank(d.next_capture);
  for (auto& r : d.records) r.capture = captures.rank(r.capture);
  for (auto& f : d.frames) f.capture = captures.rank(f.capture);
  // Keyed tables.
  keep_dense(md.captures, captures);
  md.stash_slots = captures.count_below(md.stash_slots);  // the mentioned captures below the old count
  keep_mentioned(md.stash_runs, captures, [](auto& r) -> Id& { return r.capture; });
  keep_dense(d.released, captures);
  if (!carried.numerics) return;
  for (auto& e : n.stash) e.pushed_by = captures.rank(e.pushed_by);
  for (auto& e : n.extents) e.capture = captures.rank(e.capture);
  n.installed_from = captures.rank(n.installed_from);
  keep_mentioned(n.seen_keys, captures, [](auto& k) -> Id& { return k.capture; });
  keep_mentioned(n.seen, captures, [](auto& s) -> Id& { return s.capture; });
  keep_mentioned(n.kept_by, captures, [](Id& c) -> Id& { return c; });
  keep_mentioned(n.kept, captures, [](auto& k) -> Id& { return k.capture; });
  keep_mentioned(n.dropped, captures, [](Id& c) -> Id& { return c; });
}

void rename_nodes(RunState& run, const CheckedObservers& carried) {
  DriverState& d = run.model.driver;
  OwnershipState<FlatStorage>& o = run.observers.ownership;
  IdSet nodes;
  for_each_graph(d, [&](Graph& g) {
    for (const auto& node : g.nodes) nodes.add(node.id);
  });
  nodes.add(d.next_node);
  auto each_owner = [&](auto&& f) {
    auto in = [&](auto& scopes) {
      for (auto& scope : scopes) {
        for (auto& owner : scope.owners) f(owner);
      }
    };
    in(o.open);
    in(o.closed);
    in(o.revivals);
  };
  if (carried.ownership) each_owner([&](auto& owner) { nodes.add(owner.node); });
  std::size_t k = 0;
  if (nodes.is_prefix(k)) return;  // nodes key no table: a prefix is already its own ranks
  for_each_graph(d, [&](Graph& g) {
    for (auto& node : g.nodes) node.id = nodes.rank(node.id);
  });
  d.next_node = nodes.rank(d.next_node);
  if (carried.ownership) each_owner([&](auto& owner) { owner.node = nodes.rank(owner.node); });
}

void rename_generations(Model& m) {
  DriverState& d = m.driver;
  IdSet generations;
  for_each_graph(d, [&](Graph& g) { generations.add(g.generation); });
  for (const auto& scope : m.scopes) {
    if (scope.op == spec::Op::Try) generations.add(scope.mark.generation);
  }
  generations.add(d.next_generation);
  std::size_t k = 0;
  if (generations.is_prefix(k)) return;
  for_each_graph(d, [&](Graph& g) { g.generation = generations.rank(g.generation); });
  for (auto& scope : m.scopes) {
    if (scope.op == spec::Op::Try) scope.mark.generation = generations.rank(scope.mark.generation);
  }
  d.next_generation = generations.rank(d.next_generation);
}

// ---- bytes ---------------------------------------------------------------------------------

// A list whose elements are all their bytes (no padding, no pointers): its size, then its
// elements as they are.
template <class List>
Out write_list(const List& list, Out out) {
  using T = typename List::value_type;
  static_assert(std::has_unique_object_representations_v<T> || std::is_same_v<T, bool>,
                "hashed as bytes: every byte of an element must be a value");
  out.u8(list.size());
  out.used_of<List::kCapacity * sizeof(T)>(list.data(), list.size() * sizeof(T));
  return out;
}

Out write_statements(const Model& m, std::size_t begin, std::size_t end, Out out) {
  static_assert(std::has_unique_object_representations_v<interpreter::LoggedStatement>);
  out.u8(end - begin);
  for (std::size_t i = begin; i < end; ++i) out.fixed<sizeof(interpreter::LoggedStatement)>(&m.log[i]);
  return out;
}

// Generations as ranks among those the state mentions, where a tape never saved (no
// generation) counts as the lowest: `shift` is 1 when there is one.
Id generation_rank(Id generation, unsigned shift) {
  return generation == kNone ? Id{0} : static_cast<Id>(generation + shift);
}

Out write_graph(const Graph& g, unsigned shift, Out out) {
  out.u8(generation_rank(g.generation, shift));
  out.u8(static_cast<unsigned>(g.live));
  out = write_list(g.nodes, out);  // kind, flags, id, module, record, frame, slot, input grad
  return out;
}

Out write_meta(const SymbolicMeta& meta, Out out) {
  static_assert(std::has_unique_object_representations_v<SymbolicMeta>);
  out.fixed<sizeof meta>(&meta);
  return out;
}

// How the canonical bytes write each field of the machine's state (for_each_field's list, the
// one BasicMachine::encode walks too): the region states and a number as their bytes, a list
// as write_list does, the tables keyed by another field's positions as a list per position.
// Not the semantics, which a search fixes.
struct MachineBytes {
  using Data = statemachine::MachineData<FlatStorage>;
  Out out;
  PartMarks* marks = nullptr;
  int field_index = 0;

  // Each field a part of its own (PartMarks), by its place in for_each_field's list.
  void mark() {
    static const char* const kNames[] = {"machine.regions",   "machine.semantics",  "machine.bit_at_autocast_entry",
                                         "machine.ownership_frames", "machine.fifo", "machine.captures",
                                         "machine.checkpoint_frames", "machine.stashes", "machine.autocasts",
                                         "machine.grad_frames", "machine.user_grad", "machine.fp8_backwards_in_pass",
                                         "machine.modules"};
    if (marks != nullptr) marks->at(field_index < 13 ? kNames[field_index] : "machine.other", out);
    ++field_index;
  }

  void operator()(const std::uint8_t (&regions)[4]) {
    mark();
    out.fixed<sizeof regions>(regions);
  }
  void operator()(spec::Semantics) { mark(); }
  template <class Field>
  void operator()(const Field& field) {
    mark();
    if constexpr (std::is_integral_v<Field>) {
      out.fixed<sizeof field>(&field);
    } else {
      out = write_list(field, out);
    }
  }
  // fp8sm, in a recompute: per frame, what it replayed so far.
  void operator()(const Data::List<Data::CheckpointFrame, statemachine::capacity::CheckpointFrames>& frames,
                  const Data::ReplayedRuns& replayed) {
    mark();
    out = write_list(frames, out);
    out.u8(replayed.size());
    if (replayed.empty()) return;
    for (std::size_t i = 0; i < frames.size(); ++i) {
      for (const auto& r : replayed) {
        if (r.frame == i) out.u8(r.module);
      }
      out.u8(0xFF);  // modules are below 255: frame i's list ends here
    }
  }
  void operator()(Id stash_slots, const Data::StashedRuns& runs) {
    mark();
    out.u8(stash_slots);
    out.u8(runs.size());
    if (runs.empty()) return;
    for (Id c = 0; c < stash_slots; ++c) {
      for (const auto& run : runs) {
        if (run.capture == c) out.u8(static_cast<unsigned>(run.module) | (static_cast<unsigned>(run.fp8) << 7));
      }
      out.u8(0xFF);
    }
  }
};

// `forget_ownership`: Abstractions::unsound_forget_ownership, the test's unsound abstraction.
Out write_machine(const statemachine::MachineState<FlatStorage>& machine, bool forget_ownership, Out out,
                  PartMarks* marks) {
  if (forget_ownership) {
    statemachine::MachineState<FlatStorage> without = machine;
    without.data.bit_at_autocast_entry = {};
    without.data.ownership_frames.clear();
    without.data.fifo.clear();
    return write_machine(without, false, out, marks);
  }
  MachineBytes bytes{out, marks};
  statemachine::for_each_field(machine, bytes);
  return bytes.out;
}

// `step_numbers`: some observer carried reads the step's number (the numerics' amax tags and
// stash ages); otherwise nothing in a run's future does (the interpreter hands it to observers,
// and a step's end is seen as a change of it), so it is not part of the state.
Out write_model(const Model& m, bool canonical_ids, const StepResultsWritten& step_results, bool step_numbers,
                bool forget_ownership, Out out, PartMarks* marks) {
  auto mark = [&](const char* name) {
    if (marks != nullptr) marks->at(name, out);
  };
  const DriverState& d = m.driver;
  // Raw generations start at 1: a tape never saved is below them without a shift.
  const bool unsaved_tape = std::any_of(d.tapes.begin(), d.tapes.end(), [](const Graph& g) { return g.generation == kNone; });
  const unsigned shift = canonical_ids && unsaved_tape ? 1u : 0u;
  out = write_machine(m.machine, forget_ownership, out, marks);
  mark("interpreter.scopes");
  out.u8(m.scopes.size());
  for (std::size_t i = 0; i < m.scopes.size(); ++i) {
    const auto& scope = m.scopes[i];
    const bool checkpoint = spec::is_checkpoint(scope.op);
    // A no_grad's or try's: what the chain's flag resumes from at its end (InterpreterState::closed_inside).
    const bool resumes = scope.op == spec::Op::NoGrad || scope.op == spec::Op::Try;
    const bool resumed = resumes && (i < m.closed_inside ? m.restart_requires_grad : scope.requires_grad);
    const auto& call = scope.call;
    const unsigned flags = static_cast<unsigned>(call.records_node) | (static_cast<unsigned>(call.plain) << 1) |
                           (static_cast<unsigned>(call.without_arf) << 2) |
                           (static_cast<unsigned>(call.input_requires_grad) << 3) | (static_cast<unsigned>(resumed) << 4);
    const Id fields[] = {static_cast<Id>(scope.op), checkpoint ? call.capture : kNone, static_cast<Id>(flags), call.frame,
                         scope.op == spec::Op::Try ? generation_rank(scope.mark.generation, shift) : kNone,
                         scope.mark.size};
    out.fixed<sizeof fields>(fields);
    if (checkpoint) out = write_statements(m, scope.body_begin, m.log.size(), out);  // its body so far
  }
  mark("interpreter.flags");
  out.u8(m.requires_grad);
  out.u8(static_cast<unsigned>(m.skip.active) | (static_cast<unsigned>(m.skip.until_step) << 1));
  out.u8(m.skip.depth);
  mark("driver.step_graph");
  out = write_graph(d.step_graph, shift, out);
  mark("driver.tapes");
  out.u8(d.tapes.size());
  for (const Graph& g : d.tapes) out = write_graph(g, shift, out);
  mark("driver.records");
  out.u8(d.records.size());
  for (const auto& r : d.records) {
    out.u8(r.capture);
    out.u8(static_cast<unsigned>(r.fp8) | (static_cast<unsigned>(r.body.input_requires_grad) << 1));
    out = write_statements(m, r.body.begin, r.body.end, out);
  }
  mark("driver.frames");
  out.u8(d.frames.size());
  for (const auto& f : d.frames) {
    const unsigned flags = static_cast<unsigned>(f.fp8) | (static_cast<unsigned>(f.closed) << 1) |
                           (static_cast<unsigned>(f.body.input_requires_grad) << 2);
    const Id fields[] = {f.capture, static_cast<Id>(flags), f.live_nodes, f.slots, f.recomputed_count};
    out.fixed<sizeof fields>(fields);
    for (std::size_t k = 0; k < f.recomputed_count; ++k) out.u8(d.recomputed_slots[f.recomputed_begin + k].taken);
    out = write_statements(m, f.body.begin, f.body.end, out);
  }
  mark("driver.captures");
  out.u8(d.next_capture);
  // The set of released captures (a false flag says nothing), as a bit mask.
  std::uint64_t released[4] = {0, 0, 0, 0};
  for (std::size_t c = 0; c < d.released.size(); ++c) released[c >> 6] |= std::uint64_t{d.released[c]} << (c & 63u);
  out.fixed<sizeof released>(released);
  mark("driver.next_ids");
  out.u8(d.next_node);
  out.u8(generation_rank(d.next_generation, shift));
  mark("interpreter.step");
  if (step_numbers) out.u32(m.step);
  out.u8(m.step_started);
  if (step_results.checked) mark("interpreter.step_results");
  if (!step_results.written) return out;
  const std::uint32_t most = step_results.saturated ? 1 : ~std::uint32_t{0};
  out.u32(std::min(m.current.forward_updates - step_results.forward_both, most));
  out.u32(std::min(m.current.backward_updates - step_results.backward_both, most));
  out.u8(m.current.raised.size());
  for (const spec::RaisedException& e : m.current.raised) {
    out.u8(static_cast<unsigned>(e.kind));
    out.raw(e.message.data(), e.message.size());
    out.u8(0);
  }
  return out;
}

// `backward_metas`: whether the modules' backward metas are written (abstractions.hpp,
// unread_backward_metas).
Out write_observers(const ObserverState<FlatStorage>& o, const CheckedObservers& carried, bool backward_metas, Out out,
                    PartMarks* marks) {
  auto mark = [&](const char* name) {
    if (marks != nullptr) marks->at(name, out);
  };
  mark("observers.program_grad");
  if (carried.forward_updates) out = write_list(o.program_grad.grad, out);
  mark("observers.ownership");
  if (carried.ownership) {
    const auto& own = o.ownership;
    out.u8(own.bit_before_event);
    auto write_scopes = [&](const auto& scopes) {
      out.u8(scopes.size());
      for (const auto& scope : scopes) {
        out.u8(static_cast<unsigned>(scope.recompute) | (static_cast<unsigned>(scope.bit_at_entry) << 1));
        out.u8(scope.owners.size());
        for (const auto& owner : scope.owners) {
          out.u8(owner.node);
          out.u8(owner.live);
        }
      }
    };
    write_scopes(own.open);
    write_scopes(own.closed);
    write_scopes(own.revivals);
  }
  if (!carried.numerics) return out;
  const auto& n = o.numerics;
  mark("observers.numerics.fifo_and_step");
  out.u32(static_cast<std::uint32_t>(n.fifo_length));
  out.u32(static_cast<std::uint32_t>(n.step));
  mark("observers.numerics.metas_and_stashes");
  out.u8(n.modules.size());
  for (std::size_t m = 0; m < n.modules.size(); ++m) {
    const auto& record = n.modules[m];
    out = write_meta(record.forward, out);
    if (backward_metas) out = write_meta(record.backward, out);
    out = write_meta(record.saved_for_restore, out);
    out.u8(record.registered);
    for (const auto& e : n.stash) {
      if (e.module != m) continue;
      out.u8(1);
      out = write_meta(e.value, out);
      out.u8(e.pushed_by);
      out.u32(static_cast<std::uint32_t>(e.step));
    }
    out.u8(0);
  }
  mark("observers.numerics.extents");
  out.u8(n.extents.size());
  for (std::size_t x = 0; x < n.extents.size(); ++x) {
    out.u8(n.extents[x].capture);
    out.u8(n.extents[x].recompute);
    for (const auto& occ : n.occurrences) {
      if (occ.extent != x) continue;
      out.u8(occ.module);
      out.u32(occ.count);
    }
    out.u8(0xFF);
    for (const auto& before : n.before_pop) {
      if (before.extent != x) continue;
      out.u8(before.module);
      out = write_meta(before.meta, out);
    }
    out.u8(0xFF);
  }
  mark("observers.numerics.seen");
  std::size_t next_seen = 0;  // `seen` is sorted by key, as `seen_keys` is
  for (const auto& key : n.seen_keys) {
    out.u8(key.capture);
    out.u8(key.module);
    for (; next_seen < n.seen.size() && n.seen[next_seen].capture == key.capture && n.seen[next_seen].module == key.module;
         ++next_seen) {
      out.u8(1);
      out.u64(n.seen[next_seen].history);
    }
    out.u8(0);
  }
  out.u8(kNone);
  mark("observers.numerics.kept");
  out.u8(n.installed_from);
  for (Id capture : n.kept_by) {
    out.u8(capture);
    for (const auto& kept : n.kept) {
      if (kept.capture != capture) continue;
      out.u8(kept.module);
      out = write_meta(kept.meta, out);
    }
    out.u8(0xFF);
  }
  out.u8(kNone);
  out.u8(n.dropped.size());
  out.raw(n.dropped.data(), n.dropped.size());
  return out;
}

}  // namespace

namespace {

// Whether the run's ids are already their ranks and no keyed table holds a dead entry: one
// pass over everything that mentions an id, no renaming. Most statements leave a state so,
// and then this is all the canonical form costs; so the sets are single words (ids above 63,
// which only far larger programs reach, take the full renaming instead).
class SmallIdSet {
 public:
  void add(Id id) {
    if (id < 64) {
      bits_ |= std::uint64_t{1} << id;
    } else if (id != kNone) {
      large_ = true;
    }
  }
  // {0, ..., k - 1} for k = `count`?
  bool is_prefix_of(std::size_t count) const {
    return is_prefix() && prefix_size() == count;
  }
  bool is_prefix() const { return !large_ && (bits_ & (bits_ + 1)) == 0; }
  // The k of a prefix {0, ..., k - 1}.
  std::size_t prefix_size() const { return bits_ == ~std::uint64_t{0} ? 64 : static_cast<std::size_t>(__builtin_ctzll(~bits_)); }

 private:
  std::uint64_t bits_ = 0;
  bool large_ = false;
};

bool already_canonical(const RunState& run, const CheckedObservers& carried) {
  const Model& m = run.model;
  const DriverState& d = m.driver;
  SmallIdSet records, frames, captures, nodes, generations;
  auto graph = [&](const Graph& g) {
    generations.add(g.generation);
    for (const auto& node : g.nodes) {
      records.add(node.reentrant);
      frames.add(node.frame);
      nodes.add(node.id);
    }
  };
  graph(d.step_graph);
  for (const Graph& g : d.tapes) graph(g);
  for (const auto& scope : m.scopes) {
    frames.add(scope.call.frame);
    if (scope.op == spec::Op::Try) generations.add(scope.mark.generation);
  }
  for (const auto& pack : d.packs) frames.add(pack.frame);
  nodes.add(d.next_node);
  generations.add(d.next_generation);
  if (!records.is_prefix_of(d.records.size()) || !frames.is_prefix_of(d.frames.size()) || !generations.is_prefix()) {
    return false;
  }
  if (carried.ownership) {
    const auto& o = run.observers.ownership;
    auto owners = [&](const auto& scopes) {
      for (const auto& scope : scopes) {
        for (const auto& owner : scope.owners) nodes.add(owner.node);
      }
    };
    owners(o.open);
    owners(o.closed);
    owners(o.revivals);
  }
  if (!nodes.is_prefix()) return false;
  add_capture_mentions(run, carried, captures);
  return captures.is_prefix() && keyed_tables_within(run, carried, captures.prefix_size());
}

}  // namespace

IdsBefore ids_before(const RunState& run, spec::Op op) {
  const Model& m = run.model;
  IdsBefore before;
  before.skipping = m.skip.active;
  before.stash_entries = run.observers.numerics.stash.size();
  before.records = m.driver.records.size();
  if (op == spec::Op::Close && !m.scopes.empty()) {  // only a close asks what it closes
    const auto& scope = m.scopes.back();
    before.closing = scope.op;
    before.closing_frame = scope.call.frame;
    before.closing_generation = scope.mark.generation;
    const auto& md = m.machine.data;
    before.closing_context_on_top =
        !md.checkpoint_frames.empty() && md.checkpoint_frames.back().capture == scope.call.capture &&
        (md.ownership_frames.empty() || md.ownership_frames.back().capture == scope.call.capture);
  }
  return before;
}

// Statements that neither drop what mentions an id nor hand out an id that a dense renaming
// would move, if nothing raised in them (unwinding discards nodes and leaves blocks), nothing
// was being skipped before (a close may end a try's skip) and no stash entry was popped (it
// named the checkpoint that pushed it):
//  - opening a block (a checkpoint's capture and frame are the next ids, its scope names them;
//    a try's mark names the current graph), and a module forward (its node takes the next id);
//  - closing an autocast or no_grad block;
//  - closing a checkpoint that recorded its node (reentrant) or keeps nodes of its own
//    (non-reentrant), and whose context is the innermost (upstream leaks a failed recompute's,
//    whose capture the exit then forgets): its capture stays named and nothing is released;
//  - closing a try whose mark's graph is still there.
// A skipped statement, but a close or a step, changes nothing.
bool keeps_canonical_ids(spec::Op op, const IdsBefore& before, const RunState& after) {
  using spec::Op;
  if (before.skipping) return op != Op::Close && op != Op::Step;
  if (after.model.skip.active || after.observers.numerics.stash.size() < before.stash_entries) return false;
  const DriverState& d = after.model.driver;
  switch (op) {
    case Op::AutocastOn:
    case Op::AutocastOff:
    case Op::NoGrad:
    case Op::Try:
    case Op::CheckpointReentrant:
    case Op::CheckpointNonReentrant:
    case Op::Linear:
      return true;
    case Op::Close:
      switch (before.closing) {
        case Op::AutocastOn:
        case Op::AutocastOff:
        case Op::NoGrad:
          return true;
        case Op::CheckpointReentrant:
          return before.closing_context_on_top && d.records.size() == before.records + 1;
        case Op::CheckpointNonReentrant:
          return before.closing_context_on_top && before.closing_frame != kNone &&
                 d.frames[before.closing_frame].live_nodes > 0;
        case Op::Try: {
          const Id g = before.closing_generation;
          if (d.step_graph.generation == g) return true;
          return std::any_of(d.tapes.begin(), d.tapes.end(), [g](const Graph& t) { return t.generation == g; }) ||
                 std::any_of(after.model.scopes.begin(), after.model.scopes.end(),
                             [g](const auto& scope) { return scope.op == Op::Try && scope.mark.generation == g; });
        }
        default:
          return false;
      }
    default:
      return false;
  }
}

void canonicalize(RunState& run, const CheckedObservers& carried) {
  if (already_canonical(run, carried)) return;
  compact_records_and_frames(run.model);
  rename_captures(run, carried);
  rename_nodes(run, carried);
  rename_generations(run.model);
}

void write_canonical(const RunState& run, const CheckedObservers& carried, bool canonical_ids,
                     const StepResultsWritten& step_results, const Abstractions& abstractions, ByteWriter& writer,
                     PartMarks* marks) {
  Out out = writer.out();
  const bool step_numbers = carried.numerics || !abstractions.unread_step_numbers;
  out = write_model(run.model, canonical_ids, step_results, step_numbers, abstractions.unsound_forget_ownership, out,
                    marks);
  // Only I8 reads the backward metas, comparing the two runs' (transparency.hpp).
  const bool backward_metas = step_results.written || !abstractions.unread_backward_metas;
  out = write_observers(run.observers, carried, backward_metas, out, marks);
  writer.advance(out);
}

void write_canonical(const ProgramFacts& facts, bool with_reference, bool judged, ByteWriter& writer) {
  Out out = writer.out();
  if (judged) {
    out.u8(static_cast<unsigned>(facts.diverged) | (static_cast<unsigned>(facts.reference_comparable) << 1));
    out.fixed<sizeof facts.tape_freed>(facts.tape_freed);
  } else if (with_reference) {
    out.u8(0xff);  // I8 judges no more: none of the values above
  }
  out = write_list(facts.open, out);
  out.fixed<sizeof facts.tape_saved>(facts.tape_saved);
  out.u8(facts.modules_used);
  writer.advance(out);
}

}  // namespace fp8sm::explorer
