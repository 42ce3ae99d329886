// te.LayerNormLinear without bias: y = LayerNorm(x) Wᵀ, one FP8 module (its own scaling
// metadata, registry keys and ownership claim, as TE's), whose Linear part casts the normalised
// input and the weight to FP8 under an enabled autocast; the normalisation is fp32.
//
// Spec §3.2 notes that PR #3213 re-arms a LayerNormLinear on its own recompute flag where a
// Linear reads the module's; the table does not model that difference (the scenario language
// has one kind of module), so here it claims exactly as a Linear does under every semantics.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "runtime/context.hpp"
#include "runtime/context_ref.hpp"
#include "runtime/fp8_linear.hpp"
#include "runtime/layer_norm.hpp"

namespace fp8sm::runtime {

class LayerNormLinear {
 public:
  // Weights uniform in ±1/sqrt(in_features) from `seed`; gamma ones, beta zeros.
  // std::invalid_argument for a dimension of 0, sizes too large to address or eps <= 0; nothing
  // is added to the context when the constructor throws.
  LayerNormLinear(Context& context, const std::string& name, std::size_t in_features, std::size_t out_features,
                  std::uint64_t seed = 0, float eps = 1e-5f);
  LayerNormLinear(const LayerNormLinear&) = delete;
  LayerNormLinear& operator=(const LayerNormLinear&) = delete;

  // x: rows x in_features. Throws std::invalid_argument for a wrong shape or a NaN/infinity,
  // MisuseError for a tensor of another context or once the context is destroyed.
  Tensor forward(const Tensor& x);

  spec::ModuleId id() const { return parameters_->linear.id; }
  const std::string& name() const { return parameters_->linear.name; }
  Matrix& weight() { return parameters_->linear.weight; }
  Matrix& weight_grad() { return parameters_->linear.weight_grad; }
  Matrix& gamma() { return parameters_->norm.gamma; }
  Matrix& beta() { return parameters_->norm.beta; }
  Matrix& gamma_grad() { return parameters_->norm.gamma_grad; }
  Matrix& beta_grad() { return parameters_->norm.beta_grad; }
  // A host copy of the module's meta (Context::meta).
  ModuleMeta meta() const;

  // What the module's recorded nodes share with it.
  struct Parameters {
    LinearParameters linear;
    NormParameters norm;
  };

 private:
  Context& context() const { return context_.get("LayerNormLinear", parameters_->linear.name); }

  ContextRef context_;
  std::shared_ptr<Parameters> parameters_;
};

}  // namespace fp8sm::runtime
