// te.Linear without bias: y = x Wᵀ. Under an enabled autocast its input and weight are cast to
// FP8 with the module's forward scales (E4M3) and multiplied in FP8 with fp32 accumulation; its
// backward casts the output gradient with the backward scale (E5M2 under HYBRID). Outside FP8
// it computes in fp32. Its weight gradient accumulates in weight_grad().
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "runtime/context.hpp"
#include "runtime/context_ref.hpp"
#include "runtime/fp8_linear.hpp"

namespace fp8sm::runtime {

class Linear {
 public:
  // Weights uniform in ±1/sqrt(in_features), from `seed` (deterministic). std::invalid_argument
  // for a dimension of 0 or a weight too large to address; nothing is added to the context
  // when the constructor throws.
  Linear(Context& context, const std::string& name, std::size_t in_features, std::size_t out_features,
         std::uint64_t seed = 0);
  // A module is one object: its recorded nodes and its context's meta are its own.
  Linear(const Linear&) = delete;
  Linear& operator=(const Linear&) = delete;

  // x: batch x in_features. Throws std::invalid_argument for a wrong shape or a NaN/infinity,
  // MisuseError for a tensor of another context or once the context is destroyed.
  Tensor forward(const Tensor& x);
  // The same on the chain (context.hpp).
  Matrix forward(const Matrix& x);

  spec::ModuleId id() const { return parameters_->id; }
  const std::string& name() const { return parameters_->name; }
  Matrix& weight() { return parameters_->weight; }  // out_features x in_features
  const Matrix& weight() const { return parameters_->weight; }
  Matrix& weight_grad() { return parameters_->weight_grad; }
  const Matrix& weight_grad() const { return parameters_->weight_grad; }
  // A host copy of the module's meta (Context::meta).
  ModuleMeta meta() const;

 private:
  Context& context() const { return context_.get("Linear", parameters_->name); }

  ContextRef context_;
  std::shared_ptr<LinearParameters> parameters_;  // shared with the nodes it records
};

}  // namespace fp8sm::runtime
