// The interpreter's state between statements, packed for the explorer's seen-set: equal
// encodings mean equal futures (statemachine/encoder.hpp: ids renamed by rank, entries nothing
// names dropped).
#include "interpreter/interpreter.hpp"
#include "statemachine/encoder.hpp"

namespace fp8sm::interpreter {

using spec::Op;
using spec::RaisedException;
using spec::Statement;
using statemachine::Encoder;
using statemachine::IdKind;
using statemachine::put;

namespace {

void encode_statements(Encoder& out, const std::vector<Statement>& log, std::uint32_t begin, std::uint32_t end) {
  put(out, end - begin, 4);
  for (std::uint32_t i = begin; i < end; ++i) {
    const Statement& s = log[i];
    put(out, static_cast<std::uint64_t>(s.op), 1);
    put(out, s.name, 2);
    put(out, s.retain, 1);
  }
}

// A position in the driver's records or frames, or -1 for none.
void put_position(Encoder& out, IdKind kind, int position) {
  if (position < 0) {
    out.put_no_id();
  } else {
    out.put_id(kind, static_cast<std::uint32_t>(position));
  }
}

void encode_graph(Encoder& out, const driver::Graph<ModelTraits>& graph) {
  using Node = driver::Node<ModelTraits>;
  out.put_id(IdKind::Generation, graph.generation);
  put(out, graph.freed | (graph.live << 1), 1);
  put(out, graph.nodes.size(), 4);
  for (const Node& n : graph.nodes) {
    // Kind as the model has it: 0 module, 1 checkpoint (it records no function nodes).
    const std::uint64_t kind = n.kind == Node::Kind::Checkpoint ? 1 : 0;
    put(out, kind | (n.fp8 << 1) | (n.owner << 2) | (n.backward_ran << 3) | (n.freed << 4), 1);
    out.put_id(IdKind::Node, n.id);
    put(out, n.module, 2);
    put_position(out, IdKind::Record, n.reentrant);
    put_position(out, IdKind::Frame, n.frame);
    put(out, n.slot, 4);
  }
}

}  // namespace

void Interpreter::encode_body(Encoder& out, const Body& body) const {
  encode_statements(out, log_, body.begin, body.end);
}

void Interpreter::encode(Encoder& out, bool step_results) const {
  machine_.encode(out);
  put(out, scopes_.size(), 2);
  for (const Scope& scope : scopes_) {
    put(out, static_cast<std::uint64_t>(scope.op), 1);
    if (spec::is_checkpoint(scope.op)) {
      out.put_id(IdKind::Capture, scope.call.capture);
    } else {
      out.put_no_id();
    }
    put(out, scope.call.grad_at_call, 1);
    put_position(out, IdKind::Frame, scope.call.frame);
    if (scope.op == Op::Try) {
      out.put_id(IdKind::Generation, scope.mark.generation);
    } else {
      out.put_no_id();
    }
    put(out, scope.mark.size, 4);
    if (spec::is_checkpoint(scope.op)) {
      encode_statements(out, log_, scope.body_begin, static_cast<std::uint32_t>(log_.size()));  // its body so far
    }
  }
  put(out, skip_.active | (skip_.until_step << 1), 1);
  put(out, static_cast<std::uint32_t>(skip_.depth), 4);
  encode_graph(out, driver_.step_graph());
  put(out, driver_.tapes().size(), 2);
  for (const auto& tape : driver_.tapes()) encode_graph(out, tape);
  // Records and frames are named by position (by nodes and scopes): keyed
  // entries, dropped once nothing names them.
  for (std::uint32_t i = 0; i < driver_.records().size(); ++i) {
    const auto& r = driver_.records()[i];
    out.begin_keyed(IdKind::Record, i);
    out.put_id(IdKind::Capture, r.capture);
    put(out, r.fp8, 1);
    encode_body(out, r.body);
    out.end_keyed();
  }
  for (std::uint32_t i = 0; i < driver_.frames().size(); ++i) {
    const auto& f = driver_.frames()[i];
    out.begin_keyed(IdKind::Frame, i);
    out.put_id(IdKind::Capture, f.capture);
    put(out, f.fp8 | (f.closed << 1), 1);
    put(out, static_cast<std::uint32_t>(f.live_nodes), 4);
    put(out, f.slots, 4);
    put(out, f.recomputed.size(), 4);
    for (const auto& slot : f.recomputed) put(out, slot.taken, 1);
    encode_body(out, f.body);
    out.end_keyed();
  }
  out.put_id(IdKind::Capture, driver_.next_capture());
  const std::vector<bool>& released = driver_.released();  // the interpreter never forgets: from capture 0
  for (CaptureId c = 0; c < released.size(); ++c) {
    if (!released[c]) continue;
    out.begin_keyed(IdKind::Capture, c);
    put(out, 2, 1);  // released, beside the machine's entries of c
    out.end_keyed();
  }
  out.put_id(IdKind::Node, driver_.next_node());
  out.put_id(IdKind::Generation, driver_.next_generation());
  put(out, static_cast<std::uint32_t>(step_), 4);
  put(out, step_started_, 1);
  if (!step_results) return;
  put(out, static_cast<std::uint32_t>(current_.forward_updates), 4);
  put(out, static_cast<std::uint32_t>(current_.backward_updates), 4);
  put(out, current_.raised.size(), 2);
  for (const RaisedException& e : current_.raised) {
    put(out, static_cast<std::uint64_t>(e.kind), 1);
    out.append(e.message);
    put(out, 0, 1);
  }
}

}  // namespace fp8sm::interpreter
