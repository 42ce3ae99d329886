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
  // The one rule for what an op reads (context.hpp): MisuseError for a tensor of another
  // context, std::invalid_argument for one without values, ill-formed, or not finite.
  static void require_operand(const Context& context, const Tensor& tensor, const std::string& what) {
    context.require_operand(tensor, what);
  }
  // An op without table events of its own, recorded if grad is on (context.hpp).
  static Tensor record(Context& context, Matrix output, const std::vector<const Tensor*>& inputs,
                       std::shared_ptr<NodeFunction> node) {
    return context.record_function(std::move(output), inputs, std::move(node));
  }
  // A module's forward: the table's events around its casts (context.hpp).
  static Tensor run_module(Context& context, spec::ModuleId m, const std::vector<const Tensor*>& inputs,
                           const Context::ModuleCompute& compute) {
    return context.run_module(m, inputs, compute);
  }
  static spec::ModuleId add_module(Context& context, const std::string& name) { return context.add_module(name); }
  // A host result to where the context's backend computes.
  static Matrix to_backend(Context& context, Matrix m) { return context.backend().to_backend(std::move(m)); }
  // A module's live meta (context.hpp), which its casts read and fold into.
  static MetaTensors& forward_meta(Context& context, spec::ModuleId m) { return context.state(m).forward; }
  static MetaTensors& backward_meta(Context& context, spec::ModuleId m) { return context.state(m).backward; }
  // The chain (context.hpp): what a Matrix op reads (a value the program hands in: checked as
  // such, `what` naming it), and what it leaves.
  static Tensor chain_input(const Context& context, const Matrix& x, const std::string& what) {
    return context.chain_input(x, what);
  }
  static Matrix chain_output(Context& context, Tensor output) { return context.chain_output(std::move(output)); }
};

}  // namespace fp8sm::runtime
