#include "examples/transformer.hpp"

#include <fmt/core.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <stdexcept>

#include "runtime/backends.hpp"

namespace fp8sm::examples {

using runtime::Context;
using runtime::Matrix;
using runtime::Tensor;

BlockCheckpoint parse_block_checkpoint(const std::string& text) {
  if (text == "none") return BlockCheckpoint::None;
  if (text == "reentrant") return BlockCheckpoint::Reentrant;
  if (text == "nonreentrant") return BlockCheckpoint::NonReentrant;
  if (text == "nested") return BlockCheckpoint::Nested;
  throw std::invalid_argument(
      fmt::format("unknown checkpointing '{}' (expected none, reentrant, nonreentrant or nested)", text));
}

namespace {

// One parameter and its gradient, with Adam's moments (where the backend computes).
struct Parameter {
  Matrix* value;
  Matrix* grad;
  Matrix m, v;
};

// Adam on the backend (Backend::adam: on the device for a device backend, nothing copied).
class Adam {
 public:
  Adam(runtime::Backend& backend, float learning_rate) : backend_(backend), rate_(learning_rate) {}
  void add(Matrix& value, Matrix& grad) {
    parameters_.push_back(
        Parameter{&value, &grad, backend_.zeros(value.rows, value.cols), backend_.zeros(value.rows, value.cols)});
  }
  // One update from the gradients, which are then zeroed.
  void step() {
    ++t_;
    const runtime::AdamStep step{kBeta1,
                                 1.0f - kBeta1,
                                 kBeta2,
                                 1.0f - kBeta2,
                                 rate_,
                                 1.0f - std::pow(kBeta1, static_cast<float>(t_)),
                                 1.0f - std::pow(kBeta2, static_cast<float>(t_)),
                                 kEpsilon};
    for (Parameter& p : parameters_) {
      backend_.adam(*p.value, *p.grad, p.m, p.v, step);
      backend_.zero(*p.grad);
    }
  }
  const std::vector<Parameter>& parameters() const { return parameters_; }

 private:
  static constexpr float kBeta1 = 0.9f;
  static constexpr float kBeta2 = 0.999f;
  static constexpr float kEpsilon = 1e-8f;
  runtime::Backend& backend_;
  float rate_;
  int t_ = 0;
  std::vector<Parameter> parameters_;
};

struct Block {
  Block(Context& ctx, std::size_t index, std::size_t width, std::uint64_t seed)
      : qkv(ctx, fmt::format("block{}.qkv", index), width, 3 * width, seed + 1),
        out(ctx, fmt::format("block{}.out", index), width, width, seed + 2),
        fc1(ctx, fmt::format("block{}.fc1", index), width, 4 * width, seed + 3),
        fc2(ctx, fmt::format("block{}.fc2", index), 4 * width, width, seed + 4) {}
  runtime::LayerNormLinear qkv;
  runtime::Linear out;
  runtime::LayerNormLinear fc1;
  runtime::Linear fc2;
};

class Transformer {
 public:
  Transformer(Context& ctx, const TransformerOptions& o)
      : ctx_(ctx),
        options_(o),
        tokens_(ctx, "tokens", o.vocabulary + 1, o.width, o.seed, 0.02f),
        positions_(ctx, "positions", 2 * o.length, o.width, o.seed + 100, 0.02f),
        head_(ctx, "head", o.width, o.vocabulary, o.seed + 200) {
    for (std::size_t b = 0; b < o.blocks; ++b) blocks_.push_back(std::make_unique<Block>(ctx, b, o.width, o.seed + 10 * (b + 1)));
  }

  // The loss of one batch: `inputs` and `targets` hold batch·2·length tokens, sequence after
  // sequence (a target of -1 is not counted).
  Tensor loss(const std::vector<int>& inputs, const std::vector<int>& targets) {
    std::vector<int> positions(inputs.size());
    for (std::size_t i = 0; i < positions.size(); ++i) positions[i] = static_cast<int>(i % (2 * options_.length));
    runtime::Autocast fp8(ctx_);
    Tensor h = runtime::add(ctx_, tokens_.forward(inputs), positions_.forward(positions));
    for (std::unique_ptr<Block>& block : blocks_) h = run_block(*block, h);
    Tensor loss = runtime::cross_entropy(ctx_, head_.forward(h), targets);
    fp8.close();
    return loss;
  }

  void parameters(Adam& adam) {
    adam.add(tokens_.table(), tokens_.table_grad());
    adam.add(positions_.table(), positions_.table_grad());
    for (std::unique_ptr<Block>& b : blocks_) {
      for (runtime::LayerNormLinear* l : {&b->qkv, &b->fc1}) {
        adam.add(l->weight(), l->weight_grad());
        adam.add(l->gamma(), l->gamma_grad());
        adam.add(l->beta(), l->beta_grad());
      }
      for (runtime::Linear* l : {&b->out, &b->fc2}) adam.add(l->weight(), l->weight_grad());
    }
    adam.add(head_.weight(), head_.weight_grad());
    adam.add(head_.gamma(), head_.gamma_grad());
    adam.add(head_.beta(), head_.beta_grad());
  }

  std::vector<runtime::ModuleMeta> metas() const {
    std::vector<runtime::ModuleMeta> all;
    for (const std::unique_ptr<Block>& b : blocks_) {
      for (runtime::ModuleMeta m : {b->qkv.meta(), b->out.meta(), b->fc1.meta(), b->fc2.meta()}) all.push_back(std::move(m));
    }
    all.push_back(head_.meta());
    return all;
  }

 private:
  Tensor attention(Block& b, const Tensor& h) {
    const Tensor mixed = runtime::causal_attention(ctx_, b.qkv.forward(h), 2 * options_.length);
    return runtime::add(ctx_, h, b.out.forward(mixed));
  }
  Tensor mlp(Block& b, const Tensor& h) {
    const Tensor hidden = runtime::gelu(ctx_, b.fc1.forward(h));
    return runtime::add(ctx_, h, b.fc2.forward(hidden));
  }
  Tensor run_block(Block& b, const Tensor& h) {
    const auto whole = [this, &b](const std::vector<Tensor>& in) { return mlp(b, attention(b, in[0])); };
    switch (options_.checkpoint) {
      case BlockCheckpoint::None:
        return whole({h});
      case BlockCheckpoint::Reentrant:
        return runtime::checkpoint(ctx_, runtime::CheckpointMode::Reentrant, whole, {h});
      case BlockCheckpoint::NonReentrant:
        return runtime::checkpoint(ctx_, runtime::CheckpointMode::NonReentrant, whole, {h});
      case BlockCheckpoint::Nested:
        return runtime::checkpoint(
            ctx_, runtime::CheckpointMode::NonReentrant,
            [this, &b](const std::vector<Tensor>& in) {
              const Tensor a = attention(b, in[0]);
              return runtime::checkpoint(
                  ctx_, runtime::CheckpointMode::Reentrant,
                  [this, &b](const std::vector<Tensor>& inner) { return mlp(b, inner[0]); }, {a});
            },
            {h});
    }
    return whole({h});
  }

  Context& ctx_;
  TransformerOptions options_;
  runtime::Embedding tokens_, positions_;
  std::vector<std::unique_ptr<Block>> blocks_;
  runtime::LayerNormLinear head_;
};

// A batch of the task: per sequence, `length` random tokens, the separator, the answer; the
// model reads all but the last token and predicts each next one, counted on the answer only.
void make_batch(const TransformerOptions& o, std::mt19937_64& random, std::vector<int>& inputs, std::vector<int>& targets) {
  std::uniform_int_distribution<int> token(0, static_cast<int>(o.vocabulary) - 1);
  const int separator = static_cast<int>(o.vocabulary);
  inputs.clear();
  targets.clear();
  for (std::size_t s = 0; s < o.batch; ++s) {
    std::vector<int> sequence(o.length);
    for (int& t : sequence) t = token(random);
    std::vector<int> all = sequence;
    all.push_back(separator);
    for (std::size_t i = 0; i < o.length; ++i) all.push_back(sequence[o.reverse ? o.length - 1 - i : i]);
    for (std::size_t i = 0; i + 1 < all.size(); ++i) {
      inputs.push_back(all[i]);
      targets.push_back(i + 1 > o.length ? all[i + 1] : -1);  // the answer's tokens, after the separator
    }
  }
}

}  // namespace

struct TransformerTraining::State {
  explicit State(const TransformerOptions& o)
      : options(o),
        ctx(o.recipe, runtime::make_backend(o.backend), o.semantics),
        model(ctx, o),
        adam(ctx.backend(), o.learning_rate),
        random(o.seed) {
    model.parameters(adam);
  }
  TransformerOptions options;
  Context ctx;
  Transformer model;
  Adam adam;
  std::mt19937_64 random;
  std::vector<int> inputs, targets;
  int steps = 0;
};

double estimated_memory_bytes(const TransformerOptions& o) {
  const double width = static_cast<double>(o.width), blocks = static_cast<double>(o.blocks);
  const double positions = 2.0 * static_cast<double>(o.length);  // a sequence and its answer
  const double vocabulary = static_cast<double>(o.vocabulary) + 1;
  // Per block qkv (W x 3W), out (W x W), fc1 (W x 4W), fc2 (4W x W); the embeddings and the
  // head. Each float parameter has a gradient and two Adam moments (16 bytes), and its FP8
  // codes in both layouts (2 bytes).
  const double parameters = blocks * 12.0 * width * width + (vocabulary + positions + vocabulary) * width;
  // A step's rows (batch x positions) each save, per block, about 24 widths of floats and FP8
  // codes and a row of attention probabilities; backward's gradients as much again.
  const double rows = static_cast<double>(o.batch) * positions;
  const double per_row = blocks * (24.0 * width + positions) * 4.0 + (width + vocabulary) * 4.0;
  return 18.0 * parameters + 2.0 * rows * per_row;
}

namespace {
// This machine's physical memory in bytes; 0 if it cannot be read.
double machine_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<double>(pages) * static_cast<double>(page) : 0.0;
}
}  // namespace

void require_trainable(const TransformerOptions& o) {
  if (o.steps < 1 || o.batch == 0 || o.length == 0 || o.vocabulary < 2 || o.width == 0 || o.blocks == 0) {
    throw std::invalid_argument("train_transformer: steps, batch, length, width and blocks must be positive, the vocabulary at least 2");
  }
  const double needed = estimated_memory_bytes(o), machine = machine_memory_bytes();
  if (machine > 0 && needed > machine) {
    throw std::invalid_argument(fmt::format("train_transformer: width {} and batch {} need about {:.1f} GiB, more than "
                                            "this machine's {:.1f} GiB",
                                            o.width, o.batch, needed / (1u << 30), machine / (1u << 30)));
  }
}

TransformerTraining::TransformerTraining(const TransformerOptions& o) {
  require_trainable(o);
  state_ = std::make_unique<State>(o);
}

TransformerTraining::~TransformerTraining() = default;

TransformerStep TransformerTraining::step() {
  State& s = *state_;
  const runtime::Traffic before = s.ctx.backend().traffic();
  make_batch(s.options, s.random, s.inputs, s.targets);
  const Tensor loss = s.model.loss(s.inputs, s.targets);
  s.ctx.backward(loss, Matrix(1, 1, 1.0f));
  s.adam.step();
  const float read = loss.value.to_host().values.at(0);  // the loss readout
  const runtime::StepCounts counts = s.ctx.end_step();
  return TransformerStep{s.steps++, read, counts, runtime::since(before, s.ctx.backend().traffic())};
}

runtime::Context& TransformerTraining::context() { return state_->ctx; }

std::size_t TransformerTraining::fp8_modules() const { return state_->model.metas().size(); }

std::vector<float> TransformerTraining::parameters() const {
  std::vector<float> all;
  for (const Parameter& p : state_->adam.parameters()) {
    const Matrix value = p.value->to_host();
    all.insert(all.end(), value.values.begin(), value.values.end());
  }
  return all;
}

std::vector<runtime::ModuleMeta> TransformerTraining::metas() const { return state_->model.metas(); }

TransformerResult train_transformer(const TransformerOptions& o, const std::function<void(const TransformerStep&)>& each_step) {
  TransformerTraining training(o);
  TransformerResult result;
  for (int step = 0; step < o.steps; ++step) {
    result.steps.push_back(training.step());
    if (each_step) each_step(result.steps.back());
  }
  result.parameters = training.parameters();
  result.metas = training.metas();
  return result;
}

}  // namespace fp8sm::examples
