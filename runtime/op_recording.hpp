// What the runtime's ops and layers (ops.cpp, layer_norm.cpp, layer_norm_linear.cpp,
// embedding.cpp) need of the context to record their nodes: internal, not part of the API a
// training program includes.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "runtime/context.hpp"

namespace fp8sm::runtime {

class Ops {
 public:
  // An op without table events of its own, recorded if grad is on (context.hpp).
  static Tensor record(Context& context, Matrix output, std::vector<TensorId> inputs,
                       std::shared_ptr<NodeFunction> node) {
    return context.record_function(std::move(output), std::move(inputs), std::move(node));
  }
  // A module's forward: the table's events around its casts (context.hpp).
  static Tensor run_module(Context& context, spec::ModuleId m, std::vector<TensorId> inputs,
                           const Context::ModuleCompute& compute) {
    return context.run_module(m, std::move(inputs), compute);
  }
  static spec::ModuleId add_module(Context& context, const std::string& name) { return context.add_module(name); }
  // A host result to where the context's backend computes.
  static Matrix to_backend(Context& context, Matrix m) { return context.backend().to_backend(std::move(m)); }
  // A module's live meta (context.hpp), which its casts read and fold into.
  static MetaTensors& forward_meta(Context& context, spec::ModuleId m) { return context.state(m).forward; }
  static MetaTensors& backward_meta(Context& context, spec::ModuleId m) { return context.state(m).backward; }
  // The chain (context.hpp): what a Matrix op reads, and what it leaves.
  static Tensor chain_input(const Context& context, const Matrix& x) { return context.chain_input(x); }
  static Matrix chain_output(Context& context, Tensor output) { return context.chain_output(std::move(output)); }
};

}  // namespace fp8sm::runtime
