// Random graph networks for the properties that train them: a program of ops over tensors
// (residual sums, a tensor read by several ops or twice by one, attention, LayerNorm,
// LayerNormLinear), with calls of sub-graphs of one or more inputs, checkpointed or inline,
// nested; its layers; and a training on any backend whose every result is kept on the host, so
// that two trainings compare bit for bit (test_graph_properties: checkpoints against none;
// test_device_backend_properties: a device backend against the CPU).
#pragma once

#include <fmt/core.h>
#include <fmt/format.h>
#include <rapidcheck.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <variant>
#include <vector>

#include "runtime/backends.hpp"
#include "runtime/fp8sm_runtime.hpp"

namespace fp8sm::test_support::graphs {


using runtime::Context;
using runtime::Matrix;
using runtime::Tensor;

constexpr std::size_t kRows = 4;  // every tensor's rows: one or more sequences (attention)

// ---- the program ------------------------------------------------------------------------------

// An op of a block reads tensors of its scope by index: the block's inputs, then what the ops
// and checkpoints before it wrote, in order. It writes one tensor (appended to the scope).
enum class OpKind { Linear, LayerNormLinear, LayerNorm, Relu, Gelu, Add, Attention };

struct Op {
  OpKind kind;
  std::vector<std::size_t> operands;  // one, or two for Add (possibly the same tensor twice)
  std::size_t out_width = 0;          // Linear, LayerNormLinear
  std::size_t sequence = 1;           // Attention: positions a sequence
  std::size_t in_width = 0;           // the first operand's
  std::size_t module = 0;             // the op's own layer (index into the network's layers)
};

enum class Wrap { None, Reentrant, NonReentrant };

struct Block;
// A sub-graph called with tensors of the enclosing scope: in a checkpoint, or inline (None).
struct Call {
  Wrap wrap = Wrap::None;
  std::vector<std::size_t> inputs;  // indices into the enclosing scope (repeats allowed)
  std::shared_ptr<Block> block;
  std::size_t width = 0;  // its output's
};

// A block's output is the last tensor of its scope; every other tensor it writes (and, for a
// called block, every input) is read by some op, so every node leads to the loss.
struct Block {
  std::vector<std::variant<Op, Call>> items;
};

inline const char* name(OpKind k) {
  switch (k) {
    case OpKind::Linear: return "linear";
    case OpKind::LayerNormLinear: return "layernorm_linear";
    case OpKind::LayerNorm: return "layernorm";
    case OpKind::Relu: return "relu";
    case OpKind::Gelu: return "gelu";
    case OpKind::Add: return "add";
    case OpKind::Attention: return "attention";
  }
  return "?";
}

inline void describe(const Block& block, std::size_t first, int indent, std::string& out) {
  std::size_t next = first;  // the id of the next tensor written in this scope
  for (const auto& item : block.items) {
    out += std::string(static_cast<std::size_t>(indent) * 2, ' ');
    if (const Op* op = std::get_if<Op>(&item)) {
      out += fmt::format("t{} = {}(", next, name(op->kind));
      for (std::size_t i = 0; i < op->operands.size(); ++i) out += fmt::format("{}t{}", i ? ", " : "", op->operands[i]);
      if (op->kind == OpKind::Linear || op->kind == OpKind::LayerNormLinear) out += fmt::format(") -> {}\n", op->out_width);
      else if (op->kind == OpKind::Attention) out += fmt::format(") sequence {}\n", op->sequence);
      else out += ")\n";
    } else {
      const Call& call = std::get<Call>(item);
      const char* wrap = call.wrap == Wrap::None ? "inline" : call.wrap == Wrap::Reentrant ? "reentrant" : "nonreentrant";
      out += fmt::format("t{} = {}(", next, wrap);
      for (std::size_t i = 0; i < call.inputs.size(); ++i) out += fmt::format("{}t{}", i ? ", " : "", call.inputs[i]);
      out += fmt::format(") {{  # inputs t0..t{}\n", call.inputs.size() - 1);
      describe(*call.block, call.inputs.size(), indent + 1, out);
      out += std::string(static_cast<std::size_t>(indent) * 2, ' ') + "}\n";
    }
    ++next;
  }
}

// ---- drawing one --------------------------------------------------------------------------------

struct Drawn {
  Block top;
  std::vector<std::size_t> input_widths;
};

inline std::size_t pick(std::size_t n) { return *rc::gen::inRange<std::size_t>(0, n); }

// An op over a scope of tensors of `widths`: its output's width.
inline Op draw_op(const std::vector<std::size_t>& widths) {
  Op op;
  op.kind = *rc::gen::element(OpKind::Linear, OpKind::LayerNormLinear, OpKind::LayerNorm, OpKind::Relu, OpKind::Gelu,
                              OpKind::Add, OpKind::Attention);
  const std::size_t a = pick(widths.size());
  op.operands = {a};
  if (op.kind == OpKind::Add) {
    std::vector<std::size_t> same;
    for (std::size_t i = 0; i < widths.size(); ++i) {
      if (widths[i] == widths[a]) same.push_back(i);
    }
    op.operands.push_back(same[pick(same.size())]);
  }
  if (op.kind == OpKind::Attention) {
    std::vector<std::size_t> thirds;  // widths a query, key and value split
    for (std::size_t i = 0; i < widths.size(); ++i) {
      if (widths[i] % 3 == 0) thirds.push_back(i);
    }
    if (thirds.empty()) {
      op.kind = OpKind::Linear;  // makes one for a later attention
      op.out_width = 3 * *rc::gen::inRange<std::size_t>(1, 3);
    } else {
      op.operands = {thirds[pick(thirds.size())]};
      op.sequence = *rc::gen::element<std::size_t>(1, 2, 4);
    }
  }
  if (op.kind == OpKind::Linear || op.kind == OpKind::LayerNormLinear) {
    if (op.out_width == 0) op.out_width = *rc::gen::inRange<std::size_t>(1, 7);
  }
  return op;
}

inline std::size_t output_width(const Op& op, const std::vector<std::size_t>& widths) {
  switch (op.kind) {
    case OpKind::Linear:
    case OpKind::LayerNormLinear: return op.out_width;
    case OpKind::Attention: return widths[op.operands[0]] / 3;
    default: return widths[op.operands[0]];
  }
}

// A block over inputs of `widths` (`called`: inside a call, whose inputs must all be read);
// returns its output's width. Checkpoints nest up to `depth` more levels.
inline std::size_t draw_block(Block& block, std::vector<std::size_t> widths, int depth, bool called) {
  const std::size_t inputs = widths.size();
  std::vector<bool> read(widths.size(), false);
  const auto items = *rc::gen::inRange<std::size_t>(1, called ? 5 : 8);
  for (std::size_t n = 0; n < items; ++n) {
    if (depth > 0 && *rc::gen::inRange(0, 3) == 0) {
      Call call;
      call.wrap = *rc::gen::element(Wrap::None, Wrap::Reentrant, Wrap::NonReentrant);
      const auto count = *rc::gen::inRange<std::size_t>(1, std::min<std::size_t>(widths.size(), 3) + 1);
      std::vector<std::size_t> call_widths;
      for (std::size_t i = 0; i < count; ++i) {
        call.inputs.push_back(pick(widths.size()));
        call_widths.push_back(widths[call.inputs.back()]);
        read[call.inputs.back()] = true;
      }
      call.block = std::make_shared<Block>();
      call.width = draw_block(*call.block, call_widths, depth - 1, true);
      widths.push_back(call.width);
      block.items.emplace_back(std::move(call));
    } else {
      Op op = draw_op(widths);
      op.in_width = widths[op.operands[0]];
      for (std::size_t o : op.operands) read[o] = true;
      widths.push_back(output_width(op, widths));
      block.items.emplace_back(std::move(op));
    }
    read.push_back(false);
  }
  // Whatever no op read is summed into the output (projected to its width when it differs), so
  // that every node leads to the loss; the program's own unread inputs stay leaves.
  const std::size_t output = widths.size() - 1;
  std::size_t last = output;
  for (std::size_t t = called ? 0 : inputs; t < output; ++t) {
    if (read[t]) continue;
    std::size_t addend = t;
    if (widths[t] != widths[last]) {
      Op projection{OpKind::Linear, {t}, widths[last]};
      projection.in_width = widths[t];
      block.items.emplace_back(projection);
      widths.push_back(widths[last]);
      addend = widths.size() - 1;
    }
    Op sum{OpKind::Add, {last, addend}};
    sum.in_width = widths[last];
    block.items.emplace_back(sum);
    widths.push_back(widths[last]);
    last = widths.size() - 1;
  }
  return widths[last];
}

inline Drawn draw_program() {
  Drawn d;
  d.input_widths = *rc::gen::container<std::vector<std::size_t>>(*rc::gen::inRange<std::size_t>(1, 3),
                                                                  rc::gen::inRange<std::size_t>(1, 7));
  draw_block(d.top, d.input_widths, 3, false);
  return d;
}

// ---- training it --------------------------------------------------------------------------------

// A program's layers, made in the order its ops come (each op its own layer and seed).
struct Layers {
  std::vector<std::unique_ptr<runtime::Linear>> linears;
  std::vector<std::unique_ptr<runtime::LayerNormLinear>> norm_linears;
  std::vector<std::unique_ptr<runtime::LayerNorm>> norms;
  std::size_t count() const { return linears.size() + norm_linears.size() + norms.size(); }
};

inline void make_layers(Context& ctx, Block& block, Layers& layers, std::uint64_t seed) {
  for (auto& item : block.items) {
    if (Call* call = std::get_if<Call>(&item)) {
      make_layers(ctx, *call->block, layers, seed);
      continue;
    }
    Op& op = std::get<Op>(item);
    const std::string module_name = fmt::format("M{}", layers.count());
    const std::uint64_t module_seed = seed + layers.count();
    if (op.kind == OpKind::Linear) {
      op.module = layers.linears.size();
      layers.linears.push_back(
          std::make_unique<runtime::Linear>(ctx, module_name, op.in_width, op.out_width, module_seed));
    } else if (op.kind == OpKind::LayerNormLinear) {
      op.module = layers.norm_linears.size();
      layers.norm_linears.push_back(
          std::make_unique<runtime::LayerNormLinear>(ctx, module_name, op.in_width, op.out_width, module_seed));
    } else if (op.kind == OpKind::LayerNorm) {
      op.module = layers.norms.size();
      layers.norms.push_back(std::make_unique<runtime::LayerNorm>(ctx, module_name, op.in_width));
    }
  }
}

inline runtime::CheckpointMode mode_of(Wrap w) {
  return w == Wrap::Reentrant ? runtime::CheckpointMode::Reentrant : runtime::CheckpointMode::NonReentrant;
}

// Runs `block` over `scope` (its inputs); `checkpoints`: whether calls checkpoint as drawn, or
// all run inline (the same ops on the same tensors, nothing checkpointed).
inline Tensor run_block(Context& ctx, Layers& layers, const Block& block, std::vector<Tensor> scope, bool checkpoints) {
  for (const auto& item : block.items) {
    if (const Op* op = std::get_if<Op>(&item)) {
      const Tensor& a = scope[op->operands[0]];
      switch (op->kind) {
        case OpKind::Linear: scope.push_back(layers.linears[op->module]->forward(a)); break;
        case OpKind::LayerNormLinear: scope.push_back(layers.norm_linears[op->module]->forward(a)); break;
        case OpKind::LayerNorm: scope.push_back(layers.norms[op->module]->forward(a)); break;
        case OpKind::Relu: scope.push_back(runtime::relu(ctx, a)); break;
        case OpKind::Gelu: scope.push_back(runtime::gelu(ctx, a)); break;
        case OpKind::Add: scope.push_back(runtime::add(ctx, a, scope[op->operands[1]])); break;
        case OpKind::Attention: scope.push_back(runtime::causal_attention(ctx, a, op->sequence)); break;
      }
      continue;
    }
    const Call& call = std::get<Call>(item);
    std::vector<Tensor> inputs;
    for (std::size_t i : call.inputs) inputs.push_back(scope[i]);
    const Block& inner = *call.block;
    const auto body = [&ctx, &layers, &inner, checkpoints](const std::vector<Tensor>& in) {
      return run_block(ctx, layers, inner, in, checkpoints);
    };
    if (checkpoints && call.wrap != Wrap::None) {
      scope.push_back(runtime::checkpoint(ctx, mode_of(call.wrap), body, inputs));
    } else {
      scope.push_back(body(inputs));
    }
  }
  return scope.back();
}

// Everything a training leaves, step by step and at the end.
struct Trained {
  std::vector<Matrix> outputs, input_grads, parameters, grads;
  std::vector<runtime::ModuleMeta> metas;
  std::vector<runtime::StepCounts> counts;
};

// SGD where the parameters are (the backend's), the gradient kept (as read on the host) first.
inline void sgd(runtime::Backend& backend, Matrix& value, Matrix& grad, Trained& out) {
  out.grads.push_back(grad.to_host());
  backend.sgd(value, grad, 0.25f);
  backend.zero(grad);
}

// Every matrix kept is a host copy, so two trainings compare whatever their backends.
inline Trained train(Drawn program, const runtime::Recipe& recipe, int steps, std::uint64_t seed, bool checkpoints,
              const std::string& backend = "cpu") {
  Context ctx(recipe, runtime::make_backend(backend));
  runtime::Backend& b = ctx.backend();
  Layers layers;
  make_layers(ctx, program.top, layers, seed);
  std::mt19937_64 random(seed);
  std::uniform_real_distribution<float> uniform(-2.0f, 2.0f);
  const auto random_matrix = [&](std::size_t rows, std::size_t cols) {
    Matrix m(rows, cols);
    for (float& v : m.values) v = uniform(random);
    return m;
  };
  Trained out;
  for (int step = 0; step < steps; ++step) {
    std::vector<Tensor> inputs;
    for (std::size_t w : program.input_widths) inputs.push_back(ctx.input(random_matrix(kRows, w)));
    Tensor y;
    {
      runtime::Autocast fp8(ctx);
      y = run_block(ctx, layers, program.top, inputs, checkpoints);
    }
    out.outputs.push_back(y.value.to_host());
    ctx.backward(y, random_matrix(y.value.rows, y.value.cols));
    for (const Tensor& x : inputs) out.input_grads.push_back(ctx.gradient(x).to_host());
    out.counts.push_back(ctx.end_step());
    for (auto& l : layers.linears) sgd(b, l->weight(), l->weight_grad(), out);
    for (auto& l : layers.norm_linears) {
      sgd(b, l->weight(), l->weight_grad(), out);
      sgd(b, l->gamma(), l->gamma_grad(), out);
      sgd(b, l->beta(), l->beta_grad(), out);
    }
    for (auto& l : layers.norms) {
      sgd(b, l->gamma(), l->gamma_grad(), out);
      sgd(b, l->beta(), l->beta_grad(), out);
    }
  }
  for (auto& l : layers.linears) {
    out.parameters.push_back(l->weight().to_host());
    out.metas.push_back(l->meta());
  }
  for (auto& l : layers.norm_linears) {
    out.parameters.insert(out.parameters.end(), {l->weight().to_host(), l->gamma().to_host(), l->beta().to_host()});
    out.metas.push_back(l->meta());
  }
  for (auto& l : layers.norms) out.parameters.insert(out.parameters.end(), {l->gamma().to_host(), l->beta().to_host()});
  return out;
}

inline bool same_meta(const kernels::ScalingMeta& a, const kernels::ScalingMeta& b) {
  return a.amax_history == b.amax_history && a.scale == b.scale;
}

// Bit for bit: every output, gradient, parameter, history and scale.
inline bool same_training(const Trained& a, const Trained& b) {
  if (a.outputs != b.outputs || a.input_grads != b.input_grads || a.grads != b.grads || a.parameters != b.parameters ||
      a.metas.size() != b.metas.size()) {
    return false;
  }
  for (std::size_t m = 0; m < a.metas.size(); ++m) {
    if (!same_meta(a.metas[m].forward, b.metas[m].forward) || !same_meta(a.metas[m].backward, b.metas[m].backward)) {
      return false;
    }
  }
  return true;
}

// A case: a program, a recipe, steps and a seed.
struct GraphCase {
  Drawn program;
  runtime::Recipe recipe;
  int steps = 1;
  std::uint64_t seed = 0;
};

// What a program holds, for the property's classification of the cases it ran.
struct Shape {
  int checkpoints = 0, nested = 0, fp8_modules = 0, attentions = 0, residuals = 0, several_inputs = 0, doubled = 0;
};

inline void shape_of(const Block& block, int open, Shape& shape) {
  for (const auto& item : block.items) {
    if (const Op* op = std::get_if<Op>(&item)) {
      shape.fp8_modules += op->kind == OpKind::Linear || op->kind == OpKind::LayerNormLinear;
      shape.attentions += op->kind == OpKind::Attention;
      shape.residuals += op->kind == OpKind::Add;
      shape.doubled += op->kind == OpKind::Add && op->operands[0] == op->operands[1];
      continue;
    }
    const Call& call = std::get<Call>(item);
    const bool wraps = call.wrap != Wrap::None;
    shape.checkpoints += wraps;
    shape.nested += wraps && open > 0;
    shape.several_inputs += wraps && call.inputs.size() > 1;
    shape_of(*call.block, open + (wraps ? 1 : 0), shape);
  }
}

// A case drawn, logged (a failure shows its program) and classified.
inline GraphCase draw_case() {
  GraphCase c;
  c.program = draw_program();
  c.recipe.amax_history_len = *rc::gen::inRange<std::size_t>(1, 5);
  c.recipe.margin = *rc::gen::inRange(0, 2);
  c.recipe.amax_compute_algo = *rc::gen::element(kernels::AmaxComputeAlgo::Max, kernels::AmaxComputeAlgo::MostRecent);
  c.recipe.fp8_format = *rc::gen::element(runtime::Fp8Format::Hybrid, runtime::Fp8Format::E4M3);
  c.steps = *rc::gen::inRange(1, 4);
  c.seed = *rc::gen::inRange<std::uint64_t>(0, 1000);
  std::string text;
  describe(c.program.top, c.program.input_widths.size(), 0, text);
  RC_LOG() << "inputs of widths " << fmt::format("{}", fmt::join(c.program.input_widths, ", ")) << "\n" << text;
  Shape shape;
  shape_of(c.program.top, 0, shape);
  RC_CLASSIFY(shape.checkpoints > 0, "checkpoints");
  RC_CLASSIFY(shape.nested > 0, "nested checkpoints");
  RC_CLASSIFY(shape.several_inputs > 0, "a checkpoint of several inputs");
  RC_CLASSIFY(shape.fp8_modules > 0, "FP8 modules");
  RC_CLASSIFY(shape.attentions > 0, "attention");
  RC_CLASSIFY(shape.residuals > 0, "sums");
  RC_CLASSIFY(shape.doubled > 0, "a tensor summed with itself");
  return c;
}

}  // namespace fp8sm::test_support::graphs
