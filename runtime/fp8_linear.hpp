// y = x Wᵀ as TE's Linear computes it, and its backward, for the modules that are one (Linear)
// or end in one (LayerNormLinear). Under FP8 the input and the weight are cast with the
// module's forward scales (E4M3) and multiplied in FP8 with fp32 accumulation, and the backward
// casts the output gradient with the backward scale (E5M2 under HYBRID); outside FP8 all of it is
// fp32. What the forward saves for the backward is a LinearSaved. Internal to the runtime, but
// for LinearParameters, which Linear's header names.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "runtime/backend.hpp"
#include "runtime/context.hpp"
#include "runtime/recipe.hpp"

namespace fp8sm::runtime {

// What TE saves: FP8, the codes of the input and the weight as the forward cast them (both
// layouts); fp32, the input and the weight.
struct LinearSaved {
  LinearSaved() = default;
  explicit LinearSaved(bool is_fp8) : fp8(is_fp8) {}

  bool fp8 = false;
  Matrix input, weight;
  Fp8Matrix input_fp8, weight_fp8;

  bool present() const { return fp8 ? input_fp8.held() : input.held(); }
  void clear() { *this = LinearSaved(fp8); }
};

// The parameters of a module that is or ends in a Linear, shared by the module and the nodes it
// records (a graph may be backpropagated after the module object is gone).
struct LinearParameters {
  std::string name;
  spec::ModuleId id = 0;  // set when the module joins its context, last
  Shape shape;            // out_features x in_features: the weight's and its gradient's
  Matrix weight, weight_grad;

  // The weight uniform in ±1/sqrt(in) from `seed`, a zero gradient, where `backend` computes.
  // std::invalid_argument naming `module` for a dimension of 0 or sizes that cannot be addressed.
  LinearParameters(Backend& backend, std::string name, std::size_t in_features, std::size_t out_features,
                   std::uint64_t seed, const std::string& module);
  // What a forward reads (the weight: `shape`, since the program may have replaced it, and
  // finite) and a backward writes (its gradient: `shape`); std::invalid_argument naming `module`.
  void require_forward(const std::string& module) const;
  void require_backward(const std::string& module) const;
};

// y = x Wᵀ with the module's forward meta (`forward`: slots input 0, weight 1); `saved` gets
// what the backward needs.
Matrix linear_forward(Backend& backend, const Recipe& recipe, MetaTensors& forward, const Matrix& x,
                      const Matrix& weight, bool fp8, LinearSaved& saved);
// The input's gradient, with the module's backward meta (slot grad_output 0); the weight's is
// added to `weight_grad`.
Matrix linear_backward(Backend& backend, const Recipe& recipe, MetaTensors& backward, const LinearSaved& saved,
                       const Matrix& grad_output, Matrix& weight_grad);

}  // namespace fp8sm::runtime
