// te.LayerNormLinear without bias: y = LayerNorm(x) Wᵀ, one FP8 module (its own scaling
// metadata, registry keys and ownership claim, as TE's), whose Linear part casts the normalised
// input and the weight to FP8 under an enabled autocast; the normalisation is fp32.
//
// Spec §3.2 notes that PR #3213 re-arms a LayerNormLinear on its own recompute flag where a
// Linear reads the module's; the table does not model that difference (the scenario language
// has one kind of module), so here it claims exactly as a Linear does under every semantics.
#pragma once

#include <cstdint>
#include <string>

#include "runtime/context.hpp"

namespace fp8sm::runtime {

class LayerNormLinear {
 public:
  // Weights uniform in ±1/sqrt(in_features) from `seed`; gamma ones, beta zeros.
  LayerNormLinear(Context& context, const std::string& name, std::size_t in_features, std::size_t out_features,
                  std::uint64_t seed = 0, float eps = 1e-5f);

  // x: rows x in_features. Throws std::invalid_argument for a wrong shape or a NaN/infinity.
  Tensor forward(const Tensor& x);

  spec::ModuleId id() const { return id_; }
  const std::string& name() const { return static_cast<const Context&>(context_).module_name(id_); }
  Matrix& weight() { return weight_; }
  Matrix& weight_grad() { return weight_grad_; }
  Matrix& gamma() { return gamma_; }
  Matrix& beta() { return beta_; }
  Matrix& gamma_grad() { return gamma_grad_; }
  Matrix& beta_grad() { return beta_grad_; }
  // A host copy of the module's meta (Context::meta).
  ModuleMeta meta() const { return static_cast<const Context&>(context_).meta(id_); }

 private:
  friend class LayerNormLinearNode;
  Context& context_;
  spec::ModuleId id_;
  float eps_;
  Matrix weight_, weight_grad_, gamma_, beta_, gamma_grad_, beta_grad_;
};

}  // namespace fp8sm::runtime
