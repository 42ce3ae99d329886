#include "runtime/embedding.hpp"

#include <fmt/core.h>

#include <random>
#include <stdexcept>
#include <utility>

#include "runtime/op_recording.hpp"

namespace fp8sm::runtime {

class EmbeddingNode final : public NodeFunction {
 public:
  EmbeddingNode(Embedding& module, Indices tokens) : module_(module), tokens_(std::move(tokens)) {}
  std::vector<Matrix> backward(const Matrix& grad_output) override {
    if (tokens_.values.size() != grad_output.rows) {
      throw std::logic_error(fmt::format("Embedding {}: backward without its saved tokens", module_.name()));
    }
    module_.context_.backend().embedding_backward(grad_output, tokens_, module_.table_grad_);
    return {};
  }
  // The tokens are its saved tensor (torch's embedding saves the indices).
  void drop_saved() override { tokens_ = Indices{}; }
  void take_saved(NodeFunction& twin) override { tokens_ = static_cast<EmbeddingNode&>(twin).tokens_; }
  bool is_twin(const NodeFunction& twin) const override {
    const auto* other = dynamic_cast<const EmbeddingNode*>(&twin);
    return other != nullptr && &other->module_ == &module_;
  }

 private:
  Embedding& module_;
  Indices tokens_;
};

Embedding::Embedding(Context& context, std::string name, std::size_t vocabulary, std::size_t width, std::uint64_t seed,
                     float scale)
    : context_(context), name_(std::move(name)), table_(vocabulary, width), table_grad_(vocabulary, width) {
  if (vocabulary == 0 || width == 0) throw std::invalid_argument(fmt::format("Embedding {}: a dimension is 0", name_));
  std::mt19937_64 random(seed);
  std::normal_distribution<float> normal(0.0f, scale);
  for (float& v : table_.values) v = normal(random);
  table_ = Ops::to_backend(context, std::move(table_));
  table_grad_ = Ops::to_backend(context, std::move(table_grad_));
}

Tensor Embedding::forward(const std::vector<int>& tokens) {
  for (std::size_t r = 0; r < tokens.size(); ++r) {
    if (tokens[r] < 0 || static_cast<std::size_t>(tokens[r]) >= table_.rows) {
      throw std::invalid_argument(
          fmt::format("Embedding {}: token {} at {} is not in the vocabulary of {}", name_, tokens[r], r, table_.rows));
    }
  }
  Backend& backend = context_.backend();
  Indices on_backend = backend.indices(tokens);  // an input: uploaded on a device backend
  Matrix y = backend.embedding(table_, on_backend);
  return Ops::record(context_, std::move(y), {}, std::make_shared<EmbeddingNode>(*this, std::move(on_backend)));
}

}  // namespace fp8sm::runtime
