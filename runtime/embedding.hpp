// torch.nn.Embedding: row t of the table for each token t, in fp32 (not an FP8 module). Its node
// reads no tensor of the graph (the tokens are integers, what it saves); its backward adds the
// rows' gradients into the table's gradient, rows in order.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/context.hpp"

namespace fp8sm::runtime {

class Embedding {
 public:
  // Entries normal with deviation `scale`, from `seed`.
  Embedding(Context& context, std::string name, std::size_t vocabulary, std::size_t width, std::uint64_t seed = 0,
            float scale = 1.0f);

  // tokens.size() x width. Throws std::invalid_argument for a token outside the vocabulary.
  Tensor forward(const std::vector<int>& tokens);

  const std::string& name() const { return name_; }
  Matrix& table() { return table_; }  // vocabulary x width
  Matrix& table_grad() { return table_grad_; }

 private:
  friend class EmbeddingNode;
  Context& context_;
  std::string name_;
  Matrix table_, table_grad_;
};

}  // namespace fp8sm::runtime
