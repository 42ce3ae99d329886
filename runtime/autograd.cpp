// The backward pass: the context's entry points to it (backward, gradient), the checks a graph
// passes before it fires anything, and the gradients it sums per tensor as its nodes run. The
// driver (driver/driver.hpp) walks the graph in torch's order and fires the table's events
// around each node; what a node computes and where its gradients go is here. Apart from the
// rest of the context (context.cpp: recording, modules, steps) so that one file says what a
// backward pass does, from its checks to its sums.
#include "runtime/autograd.hpp"

#include <fmt/core.h>

#include <stdexcept>
#include <utility>
#include <vector>

#include "driver/driver.hpp"
#include "runtime/errors.hpp"

namespace fp8sm::runtime {

// ---- the checks before a pass ---------------------------------------------------------------

void check_graph(const driver::Graph<RuntimeTraits>::Nodes& nodes, TensorId loss, const std::optional<Shape>& loss_shape,
                 const Matrix* grad_output, const std::string& what) {
  // The shape each tensor was written with, by its node in this graph (leaves are not here).
  std::unordered_map<TensorId, Shape> written;
  for (const auto& node : nodes) written[node.payload->output] = node.payload->output_shape;
  std::unordered_map<TensorId, bool> leads{{loss, true}};  // the tensors whose gradient backward computes
  for (std::size_t i = nodes.size(); i-- > 0;) {
    const NodeFunction& node = *nodes[i].payload;
    if (leads.count(node.output) == 0) {
      throw MisuseError(fmt::format(
          "{}: recorded node #{} (of {}) does not lead to the loss: torch would not run its backward, which the state "
          "machine would count (every op recorded in the graph must feed the loss)",
          what, i, nodes.size()));
    }
    for (std::size_t k = 0; k < node.inputs.size(); ++k) {
      leads[node.inputs[k]] = true;
      const auto writer = written.find(node.inputs[k]);
      if (writer != written.end() && writer->second != node.input_shapes[k]) {
        throw MisuseError(fmt::format("{}: recorded node #{} read tensor #{} as {} x {}, but it was written as {} x {} (a "
                                      "tensor's value was replaced after it was computed)",
                                      what, i, node.inputs[k], node.input_shapes[k].rows, node.input_shapes[k].cols,
                                      writer->second.rows, writer->second.cols));
      }
    }
    node.require_ready(what);
  }
  const auto loss_writer = written.find(loss);
  if (!nodes.empty() && loss_writer == written.end()) {
    throw MisuseError(fmt::format("{}: the loss is not written by the graph it backpropagates", what));
  }
  // The gradient's shape is the loss's as its node wrote it, else the Tensor's (a leaf; a pass
  // over nothing passes any gradient through).
  std::optional<Shape> expected = loss_shape;
  if (loss_writer != written.end()) {
    if (loss_shape && *loss_shape != loss_writer->second) {
      throw MisuseError(fmt::format("{}: the loss is {} x {}, but it was written as {} x {} (its value was replaced)", what,
                                    loss_shape->rows, loss_shape->cols, loss_writer->second.rows,
                                    loss_writer->second.cols));
    }
    expected = loss_writer->second;
  }
  if (grad_output != nullptr && expected && grad_output->shape() != *expected) {
    throw MisuseError(fmt::format("{}: grad_output is {} x {}, the loss {} x {} (a gradient has its tensor's shape)", what,
                                  grad_output->rows, grad_output->cols, expected->rows, expected->cols));
  }
}

// ---- the gradients of a pass ----------------------------------------------------------------

void Gradients::seed(TensorId loss, Matrix gradient) {
  sums_.clear();
  sums_[loss] = std::move(gradient);
}

// A node's backward: the gradient its output collected from all its consumers (complete: they
// all ran before it) in, its inputs' gradients out, each added to what that input collected.
// Every node leads to the loss (check_graph), so a gradient reaches it, but for one case: a
// reentrant checkpoint whose function did not read one of its inputs passes that input none.
// torch still runs the node that wrote it (the engine follows the graph, not the values) and
// TE's autograd Functions see zeros (materialized grads): so does the node here.
void Gradients::run_node(NodeFunction& node) {
  const auto found = sums_.find(node.output);
  Matrix gradient;
  if (found == sums_.end()) {
    gradient = backend_.zeros(node.output_shape.rows, node.output_shape.cols);
  } else {
    gradient = std::move(found->second);
    sums_.erase(found);
  }
  std::vector<Matrix> inputs = node.backward(gradient);
  if (inputs.size() != node.inputs.size()) {
    throw std::logic_error(fmt::format("backward: a node read {} tensors and returned {} gradients", node.inputs.size(),
                                       inputs.size()));
  }
  for (std::size_t i = 0; i < inputs.size(); ++i) add(node.inputs[i], std::move(inputs[i]));
}

// The first gradient a tensor gets is kept as it is, later ones are added to it, in the order
// they come: the same order with any checkpointing, so the same bits.
void Gradients::add(TensorId tensor, Matrix gradient) {
  auto [at, first] = sums_.try_emplace(tensor, std::move(gradient));
  if (first) return;
  Matrix& sum = at->second;
  if (sum.rows != gradient.rows || sum.cols != gradient.cols) {
    throw std::logic_error(fmt::format("backward: gradients of tensor #{} of shapes {}x{} and {}x{}", tensor, sum.rows,
                                       sum.cols, gradient.rows, gradient.cols));
  }
  backend_.add_into(sum, gradient);
}

const Matrix* Gradients::find(TensorId tensor) const {
  const auto found = sums_.find(tensor);
  return found != sums_.end() ? &found->second : nullptr;
}

Matrix Gradients::copy(TensorId tensor) const {
  const Matrix* found = find(tensor);
  return found != nullptr ? *found : Matrix{};
}

// ---- the context's passes -------------------------------------------------------------------

Matrix Context::backward(const Matrix& grad_output, bool retain_graph) {
  return chain_backward(spec::kCurrentGraph, chain_, grad_output, retain_graph, "backward");
}

Matrix Context::backward(const std::string& tape, const Matrix& grad_output, bool retain_graph) {
  const std::uint16_t saved = saved_tape(tape);
  return chain_backward(saved, tape_chains_.at(saved), grad_output, retain_graph,
                        fmt::format("backward of tape '{}'", tape));
}

void Context::backward(const Tensor& loss, const Matrix& grad_output, bool retain_graph) {
  require_operand(loss, "backward: the loss");
  run_backward(spec::kCurrentGraph, loss.id, loss.value.shape(), grad_output, retain_graph, "backward");
}

std::uint16_t Context::saved_tape(const std::string& tape) const {
  const auto found = tapes_.find(tape);
  if (found == tapes_.end()) throw MisuseError(fmt::format("backward: no graph was saved as '{}' (save_graph first)", tape));
  return found->second;
}

Matrix Context::chain_backward(std::uint16_t tape, Chain chain, const Matrix& grad_output, bool retain_graph,
                               const std::string& what) {
  run_backward(tape, chain.end, std::nullopt, grad_output, retain_graph, what);
  return gradients_->copy(chain.start);
}

Matrix Context::gradient(const Tensor& tensor) const {
  require_own(tensor, "gradient");
  return gradients_->copy(tensor.id);
}

void Context::run_backward(std::uint16_t tape, TensorId loss, const std::optional<Shape>& loss_shape,
                           const Matrix& grad_output, bool retain_graph, const std::string& what) {
  if (checkpoints_open_ > 0 || driver_->recompute_depth() > 0) {
    throw MisuseError(fmt::format("{}: inside a checkpoint's function (its recompute would run the backward again)", what));
  }
  require_program_value(grad_output, fmt::format("{}: grad_output", what));
  check_graph(tape == spec::kCurrentGraph ? driver_state_->step_graph.nodes : driver_state_->tapes[tape].nodes, loss,
              loss_shape, &grad_output, what);
  gradients_->seed(loss, backend_->to_backend(grad_output));
  // Without retain the pass frees the current graph (also when it raises): the next forward
  // records a new one, on a new chain.
  const bool frees_current = !retain_graph && tape == spec::kCurrentGraph;
  try {
    completes(driver_->backward(tape, retain_graph));
  } catch (...) {
    gradients_->clear();
    if (frees_current) new_chain();
    throw;
  }
  if (frees_current) new_chain();
}

// The driver's host: the node whose turn it is in the pass.
void Context::node_backward(NodeFunction& node) { gradients_->run_node(node); }

}  // namespace fp8sm::runtime
