// te.Linear without bias: y = x Wᵀ. Under an enabled autocast its input and weight are cast to
// FP8 with the module's forward scales (E4M3) and multiplied in FP8 with fp32 accumulation; its
// backward casts the output gradient with the backward scale (E5M2 under HYBRID). Outside FP8
// it computes in fp32. Its weight gradient accumulates in weight_grad().
#pragma once

#include <cstdint>
#include <string>

#include "runtime/context.hpp"

namespace fp8sm::runtime {

class Linear {
 public:
  // Weights uniform in ±1/sqrt(in_features), from `seed` (deterministic).
  Linear(Context& context, const std::string& name, std::size_t in_features, std::size_t out_features,
         std::uint64_t seed = 0);

  // x: batch x in_features. Throws std::invalid_argument for a wrong shape or a NaN/infinity.
  Tensor forward(const Tensor& x);
  // The same on the chain (context.hpp).
  Matrix forward(const Matrix& x);

  spec::ModuleId id() const { return id_; }
  const std::string& name() const { return context_.module_name(id_); }
  Matrix& weight() { return weight_; }  // out_features x in_features
  const Matrix& weight() const { return weight_; }
  Matrix& weight_grad() { return weight_grad_; }
  const Matrix& weight_grad() const { return weight_grad_; }
  // A host copy of the module's meta (Context::meta).
  ModuleMeta meta() const { return context_.meta(id_); }

 private:
  friend class LinearNode;
  Context& context_;
  spec::ModuleId id_;
  Matrix weight_;
  Matrix weight_grad_;
};

}  // namespace fp8sm::runtime
