// Runs a scenario on the model: turns each statement into table events (spec §3.5's composite
// operations included), keeps the autograd tape, runs backward passes with their recomputes,
// and models exceptions, `try` and steps. Shared by every semantics.
//
// Statements are fed one at a time, exactly as a program grows; the interpreter keeps them in
// a log, and a checkpoint keeps the slice of it that is its body, so that its recompute can
// replay it. Every statement costs time independent of how deep it is nested (the work of
// recomputes aside, which is the program's own).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <stdexcept>
#include <vector>

#include "spec/scenario.hpp"
#include "spec/semantics.hpp"
#include "spec/step_result.hpp"
#include "statemachine/encoder.hpp"
#include "statemachine/machine.hpp"
#include "statemachine/observer.hpp"
#include "statemachine/tape.hpp"

namespace fp8sm::statemachine {

// An exception of the modelled program, in flight.
struct ModelException {
  spec::RaisedException raised;
};

class Interpreter : private Hooks {
 public:
  // `observer` (may be nullptr) must outlive the interpreter.
  Interpreter(spec::Semantics semantics, Observer* observer);
  // A copy of `other` between two statements, reporting to `observer` (a copy of other's
  // observer, which this constructor attaches to the new machine, or nullptr).
  Interpreter(const Interpreter& other, Observer* observer);
  Interpreter(const Interpreter&) = delete;
  Interpreter& operator=(const Interpreter&) = delete;

  // Runs a whole program: every statement, then the end of file.
  void run(const spec::Program& program);

  void feed(const spec::Statement& statement);
  void end_of_file();

  // One result per step so far (counts and escaped exceptions; violations are the checker's).
  const std::vector<spec::StepResult>& steps() const { return steps_; }
  // The results of finished steps, handed over and forgotten (the explorer keeps none).
  std::vector<spec::StepResult> take_steps() { return std::exchange(steps_, {}); }

  // Between statements: everything the interpreter's future depends on, packed (the
  // machine's own snapshot included).
  void encode(Encoder& out) const;

  const Machine& machine() const { return machine_; }
  Machine& machine() { return machine_; }

 private:
  struct Scope {
    spec::Op op = spec::Op::Try;
    // checkpoints
    CaptureId capture = 0;
    bool grad_at_call = false;     // reentrant: a node is recorded only if grad was on
    bool plain = false;            // run as a plain call (Machine::checkpoint_call_is_plain)
    std::uint32_t body_begin = 0;  // the first statement of its body in the log
    int frame = -1;                // non-reentrant: its frame
    // try
    std::uint32_t graph_generation = 0;
    std::size_t graph_mark = 0;
  };
  struct Skip {
    bool active = false;
    bool until_step = false;  // an uncaught exception: skip the rest of the step
    int depth = 0;            // blocks opened while skipping
  };
  // Where a node's saved tensor goes (torch's saved-tensor hooks, innermost only): into the
  // slots of a non-reentrant checkpoint's original forward, or into what its recompute saves.
  struct PackTarget {
    int frame = -1;
    bool recompute = false;
  };

  // Statements; `at` is the statement's place in the log.
  void run_statement(std::uint32_t at);
  void execute(const spec::Statement& s, std::uint32_t at);
  void open_scope(const spec::Statement& s, std::uint32_t at);
  void close_scope(std::uint32_t at);
  void exit_scope(Scope& scope, bool exceptional, std::uint32_t body_end);
  void run_module(spec::ModuleId m);
  void run_recompute_uncaptured();
  void run_save(std::uint16_t tape);
  void run_backward(const spec::Statement& s);
  void skip(const spec::Statement& s);
  void unwind(const ModelException& e, std::uint32_t at);
  void end_step();

  // Backward engine.
  void backpropagate(const std::vector<Node>& nodes, Graph* kept, bool retain);
  void unpack_saved(const Node& node);
  void recompute(CaptureId capture, bool fp8, const Body& body, Graph& graph);
  void recompute_frame(int frame);
  void replay(const Body& body, Graph& graph);
  void record_node(Node node);
  // Nodes that will never be backpropagated (again): checkpoints they held are released.
  void drop_nodes(const std::vector<Node>& nodes);
  // The same for nodes that never were (a try, an uncaught exception, a failed recompute
  // abandoned them): the observer learns they were discarded.
  void abandon_nodes(const std::vector<Node>& nodes);
  void release_checkpoint(CaptureId capture);

  template <class Event>
  void fire(const Event& event);  // throws ModelException if the event raised
  void fire_autocast_exit(bool user);

  // Hooks: count, then forward to the observer.
  void forward_update() override;
  void backward_update() override;
  void discard_forward_amax() override;
  void registered(ModuleId m) override;
  void stash(ModuleId m) override;
  void save_for_restore(ModuleId m) override;
  void pop_stash(ModuleId m) override;
  void restore(ModuleId m) override;
  void stash_for(ModuleId m, CaptureId c) override;
  void replay_stash(ModuleId m, CaptureId c, unsigned occurrence) override;
  void release_stash(CaptureId c) override;
  void claimed(ModuleId m, bool owner) override;
  void ownership_captured(CaptureId c) override;
  void ownership_installed(CaptureId c) override;

  Observer* observer_;
  Observer silent_;
  Machine machine_;

  // Every statement fed, in order: checkpoint bodies are slices of it, and a recompute
  // replays its slice (it never grows during a replay).
  std::vector<spec::Statement> log_;
  std::vector<Scope> scopes_;
  std::size_t base_ = 0;  // scopes below belong to the context a replay interrupted
  int replay_depth_ = 0;  // recomputes in progress
  Skip skip_;
  std::vector<PackTarget> packs_;  // innermost last

  Graph step_graph_;
  Graph* current_graph_ = &step_graph_;
  std::vector<Graph> tapes_;  // index = tape name
  std::uint32_t next_generation_ = 1;
  std::vector<ReentrantRecord> reentrant_;
  std::vector<NonReentrantFrame> frames_;
  CaptureId next_capture_ = 0;
  std::vector<bool> released_;  // per capture
  NodeId next_node_ = 0;
  std::optional<bool> last_claim_owner_;

  int step_ = 0;
  bool step_started_ = false;
  spec::StepResult current_;
  std::vector<spec::StepResult> steps_;
};

}  // namespace fp8sm::statemachine
