// Runs a scenario program as a training program on the runtime, so that the property tests can
// compare the runtime with the model statement for statement. Every `linear Lk` is a 4x4
// Linear applied to the running activation; a checkpoint block is a checkpointed function of
// it; `try` catches what its body raised and discards what the body recorded; `save` and
// `backward [TAPE] [retain]` are the context's save_graph and backward; an uncaught exception
// ends the step's work (the rest of the step is skipped, and what it recorded is discarded, as
// in the model); `recompute_uncaptured` is the context's recompute_uncaptured. Every table event
// the runtime fires is logged, with what it raised.
#pragma once

#include <fmt/core.h>

#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "runtime/fp8sm_runtime.hpp"
#include "spec/scenario.hpp"
#include "statemachine/machine.hpp"

namespace fp8sm::test_support {

// `raise` statements of the program.
struct ProgramRaised : std::runtime_error {
  ProgramRaised() : std::runtime_error("raised by the program") {}
};

// The runtime refused the program where the model goes on: a non-reentrant recompute that
// recorded another node at a slot than its forward did (CheckpointError: TE would hand over the
// wrong tensors; the model keeps none), or a backward of a tape no `save` reached (its `save`
// was skipped by an exception: the runtime refuses an unknown tape as misuse, where the model
// runs an empty pass). The property discards such programs.
struct RuntimeRefused : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct RuntimeRun {
  std::vector<runtime::StepCounts> counts;            // per step
  std::vector<std::vector<std::string>> raised;       // per step, exception kinds that escaped
  std::string machine_snapshot;                       // at the end
  std::vector<runtime::FiredEvent> events;            // every event fired, in order
};

class ScenarioOnRuntime {
 public:
  ScenarioOnRuntime(spec::Semantics semantics, const runtime::Recipe& recipe, int modules,
                    std::unique_ptr<runtime::Backend> backend = runtime::make_cpu_backend())
      : context_(recipe, std::move(backend), semantics) {
    for (int m = 0; m < modules; ++m) {
      modules_.push_back(std::make_unique<runtime::Linear>(context_, fmt::format("L{}", m), 4, 4,
                                                          static_cast<std::uint64_t>(m + 1)));
    }
  }

  RuntimeRun run(const spec::Program& program) {
    const Block top = parse(program.statements);
    RuntimeRun out;
    context_.log_events(&out.events);
    runtime::Context::TapeMark step_start = context_.mark();
    std::vector<std::string> raised;
    bool started = false;
    bool skipping = false;
    runtime::Matrix h = input();
    for (const Item& item : top.items) {
      if (item.statement.op == spec::Op::Step && !item.block) {
        out.counts.push_back(context_.end_step());
        out.raised.push_back(std::move(raised));
        raised.clear();
        started = skipping = false;
        h = input();
        step_start = context_.mark();
        continue;
      }
      started = true;
      if (skipping) continue;
      try {
        h = execute(item, h);
      } catch (const ProgramRaised&) {
        raised.push_back("UserError");
        skipping = true;
      } catch (const runtime::StateError& e) {
        raised.push_back(e.kind());
        skipping = true;
      } catch (const runtime::CheckpointError& e) {
        context_.log_events(nullptr);
        throw RuntimeRefused(e.what());
      }
      // The step's program stops here: what it recorded is never backpropagated.
      if (skipping) context_.discard_since(step_start);
    }
    if (started) {
      out.counts.push_back(context_.end_step());
      out.raised.push_back(std::move(raised));
    }
    out.machine_snapshot = context_.machine().snapshot();
    context_.log_events(nullptr);
    return out;
  }

 private:
  struct Block;
  struct Item {
    spec::Statement statement;
    std::shared_ptr<Block> block;  // set for a block opening
  };
  struct Block {
    std::vector<Item> items;
  };

  static runtime::Matrix input() { return runtime::Matrix(2, 4, 0.5f); }

  static Block parse(const std::vector<spec::Statement>& statements) {
    std::size_t at = 0;
    return parse_body(statements, at);
  }
  static Block parse_body(const std::vector<spec::Statement>& statements, std::size_t& at) {
    Block block;
    while (at < statements.size()) {
      const spec::Statement& s = statements[at++];
      if (s.op == spec::Op::Close) return block;
      Item item{s, nullptr};
      if (spec::opens_block(s.op)) item.block = std::make_shared<Block>(parse_body(statements, at));
      block.items.push_back(std::move(item));
    }
    return block;
  }

  runtime::Matrix execute_body(const Block& block, runtime::Matrix h) {
    for (const Item& item : block.items) h = execute(item, h);
    return h;
  }

  runtime::Matrix execute(const Item& item, const runtime::Matrix& h) {
    using spec::Op;
    const spec::Statement& s = item.statement;
    switch (s.op) {
      case Op::Linear:
        return modules_.at(s.name)->forward(h);
      case Op::RaiseAlways:
        throw ProgramRaised();
      case Op::RaiseOriginal:
        if (!context_.in_recompute()) throw ProgramRaised();
        return h;
      case Op::RaiseRecompute:
        if (context_.in_recompute()) throw ProgramRaised();
        return h;
      case Op::RecomputeUncaptured:
        context_.recompute_uncaptured();
        return h;
      case Op::Save:
        context_.save_graph(tape_name(s.name));
        saved_.insert(s.name);
        return h;
      case Op::Backward:
        backward(s, runtime::Matrix(h.rows, h.cols, 1.0f));
        return h;
      case Op::AutocastOn:
      case Op::AutocastOff: {
        runtime::Autocast scope(context_, s.op == Op::AutocastOn);
        const runtime::Matrix out = execute_body(*item.block, h);
        scope.close();
        return out;
      }
      case Op::NoGrad: {
        runtime::NoGrad scope(context_);
        const runtime::Matrix out = execute_body(*item.block, h);
        scope.close();
        return out;
      }
      case Op::CheckpointReentrant:
      case Op::CheckpointNonReentrant: {
        const auto block = item.block;
        return runtime::checkpoint(
            context_, s.op == Op::CheckpointReentrant ? runtime::CheckpointMode::Reentrant : runtime::CheckpointMode::NonReentrant,
            [this, block](const runtime::Matrix& in) { return execute_body(*block, in); }, h);
      }
      case Op::Try: {
        const runtime::Context::TapeMark mark = context_.mark();
        try {
          return execute_body(*item.block, h);
        } catch (const ProgramRaised&) {
        } catch (const runtime::StateError&) {
        }
        context_.discard_since(mark);
        return h;
      }
      default:
        throw std::logic_error("ScenarioOnRuntime: statement not supported");
    }
  }

  static std::string tape_name(std::uint16_t tape) { return fmt::format("tape{}", tape); }

  void backward(const spec::Statement& s, const runtime::Matrix& grad) {
    if (s.name == spec::kCurrentGraph) {
      context_.backward(grad, s.retain);
    } else {
      if (saved_.count(s.name) == 0) throw RuntimeRefused("backward of a tape no save reached");
      context_.backward(tape_name(s.name), grad, s.retain);
    }
  }

  runtime::Context context_;
  std::vector<std::unique_ptr<runtime::Linear>> modules_;
  std::set<std::uint16_t> saved_;  // tapes some `save` reached
};

}  // namespace fp8sm::test_support
