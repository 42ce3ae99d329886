#include "runtime/embedding.hpp"

#include <fmt/core.h>

#include <random>
#include <stdexcept>
#include <utility>

#include "runtime/op_recording.hpp"

namespace fp8sm::runtime {

class EmbeddingNode final : public NodeFunction {
 public:
  EmbeddingNode(Backend& backend, std::shared_ptr<Embedding::Parameters> parameters, Indices tokens)
      : backend_(backend), parameters_(std::move(parameters)), tokens_(std::move(tokens)) {}
  std::vector<Matrix> backward(const Matrix& grad_output) override {
    if (tokens_.values.size() != grad_output.rows) {
      throw std::logic_error(fmt::format("Embedding {}: backward without its saved tokens", parameters_->name));
    }
    backend_.embedding_backward(grad_output, tokens_, parameters_->table_grad);
    return {};
  }
  // The tokens are its saved tensor (torch's embedding saves the indices).
  void drop_saved() override { tokens_ = Indices{}; }
  void take_saved(NodeFunction& twin) override { tokens_ = static_cast<EmbeddingNode&>(twin).tokens_; }
  bool is_twin(const NodeFunction& twin) const override {
    const auto* other = dynamic_cast<const EmbeddingNode*>(&twin);
    return other != nullptr && other->parameters_ == parameters_;
  }
  void require_ready(const std::string& what) const override {
    require_shape(parameters_->table_grad, parameters_->shape,
                  fmt::format("{}: Embedding {}'s table gradient", what, parameters_->name));
  }

 private:
  Backend& backend_;  // the context's: the node lives in its graph
  std::shared_ptr<Embedding::Parameters> parameters_;
  Indices tokens_;
};

Embedding::Embedding(Context& context, std::string name, std::size_t vocabulary, std::size_t width, std::uint64_t seed,
                     float scale)
    : context_(context), parameters_(std::make_shared<Parameters>()) {
  Parameters& p = *parameters_;
  p.name = std::move(name);
  if (vocabulary == 0 || width == 0) throw std::invalid_argument(fmt::format("Embedding {}: a dimension is 0", p.name));
  value_count(vocabulary, width, fmt::format("Embedding {}: table", p.name));
  p.shape = {vocabulary, width};
  Matrix table(vocabulary, width);
  std::mt19937_64 random(seed);
  std::normal_distribution<float> normal(0.0f, scale);
  for (float& v : table.values) v = normal(random);
  p.table = Ops::to_backend(context, std::move(table));
  p.table_grad = Ops::to_backend(context, Matrix(vocabulary, width));
}

Tensor Embedding::forward(const std::vector<int>& tokens) {
  Context& context = context_.get("Embedding", parameters_->name);
  const Parameters& p = *parameters_;
  if (tokens.empty()) throw std::invalid_argument(fmt::format("Embedding {}: no tokens", p.name));
  for (std::size_t r = 0; r < tokens.size(); ++r) {
    if (tokens[r] < 0 || static_cast<std::size_t>(tokens[r]) >= p.shape.rows) {
      throw std::invalid_argument(
          fmt::format("Embedding {}: token {} at {} is not in the vocabulary of {}", p.name, tokens[r], r, p.shape.rows));
    }
  }
  require_shape(p.table, p.shape, fmt::format("Embedding {}: table", p.name));
  Backend& backend = context.backend();
  Indices on_backend = backend.indices(tokens);  // an input: uploaded on a device backend
  Matrix y = backend.embedding(p.table, on_backend);
  return Ops::record(context, std::move(y), {}, std::make_shared<EmbeddingNode>(backend, parameters_, std::move(on_backend)));
}

}  // namespace fp8sm::runtime
