// torch.nn.Embedding: row t of the table for each token t, in fp32 (not an FP8 module). Its node
// reads no tensor of the graph (the tokens are integers, what it saves); its backward adds the
// rows' gradients into the table's gradient, rows in order.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/context.hpp"
#include "runtime/context_ref.hpp"

namespace fp8sm::runtime {

class Embedding {
 public:
  // Entries normal with deviation `scale`, from `seed`. std::invalid_argument for a dimension of
  // 0 or a table too large to address.
  Embedding(Context& context, std::string name, std::size_t vocabulary, std::size_t width, std::uint64_t seed = 0,
            float scale = 1.0f);
  Embedding(const Embedding&) = delete;
  Embedding& operator=(const Embedding&) = delete;

  // tokens.size() x width. Throws std::invalid_argument for no tokens or a token outside the
  // vocabulary, MisuseError once the context is destroyed.
  Tensor forward(const std::vector<int>& tokens);

  const std::string& name() const { return parameters_->name; }
  Matrix& table() { return parameters_->table; }  // vocabulary x width
  Matrix& table_grad() { return parameters_->table_grad; }

  // What the module's recorded nodes share with it.
  struct Parameters {
    std::string name;
    Shape shape;  // vocabulary x width
    Matrix table, table_grad;
  };

 private:
  ContextRef context_;
  std::shared_ptr<Parameters> parameters_;
};

}  // namespace fp8sm::runtime
