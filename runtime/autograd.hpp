// The runtime's gradient engine: what a backward pass computes, apart from the table's events.
// The driver (driver/driver.hpp) decides which node runs when and fires every event around it;
// this is the arithmetic it hands each node to: the checks a graph must pass before a pass
// fires anything (check_graph), and the gradients a pass sums per tensor (Gradients). Its own
// file so that the backward pass reads in one place (autograd.cpp, with the context's entry
// points to it), apart from recording, scopes and the table's actions. Internal: not part of
// the API a training program includes.
#pragma once

#include <optional>
#include <string>
#include <unordered_map>

#include "driver/tape.hpp"
#include "runtime/backend.hpp"
#include "runtime/context.hpp"
#include "runtime/node_function.hpp"

namespace fp8sm::runtime {

// The checks before a backward pass over `nodes` from tensor `loss` fires anything: MisuseError
// unless every node leads to the loss (torch would not run the backward of one that does not,
// which the table would count), every tensor a node read is still the shape its writer recorded,
// `grad_output` (when given) is the loss's shape, and every node can run its backward
// (NodeFunction::require_ready). `loss_shape`: the loss's, when the caller has it (a Tensor).
void check_graph(const driver::Graph<RuntimeTraits>::Nodes& nodes, TensorId loss, const std::optional<Shape>& loss_shape,
                 const Matrix* grad_output, const std::string& what);

// The gradients of one backward pass, per tensor, summed on `backend` as the nodes run.
class Gradients {
 public:
  explicit Gradients(Backend& backend) : backend_(backend) {}

  // A new pass from `loss` with `gradient` (on the backend): the last pass's are dropped.
  void seed(TensorId loss, Matrix gradient);
  void clear() { sums_.clear(); }
  // A node's backward: its output's gradient in (then freed), its inputs' added to theirs.
  void run_node(NodeFunction& node);
  // `gradient` added to what `tensor` collected so far (the first one is kept as it is).
  void add(TensorId tensor, Matrix gradient);
  // What `tensor` collected, or nullptr if no gradient reached it.
  const Matrix* find(TensorId tensor) const;
  // A copy of what `tensor` collected, or an empty matrix if no gradient reached it.
  Matrix copy(TensorId tensor) const;

 private:
  Backend& backend_;
  std::unordered_map<TensorId, Matrix> sums_;
};

}  // namespace fp8sm::runtime
