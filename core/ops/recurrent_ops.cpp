// Recurrent ops: SimpleRNN, LSTM and GRU cells run over whole time-major sequences, and their
// gradients (backpropagation through time in one op each). Builders, shape functions and gradients;
// kernels in backends/cpu/recurrent_kernels.cpp and backends/cuda/recurrent_ops.cpp.
#include <string_view>

#include "tower/core/gate_activation.h"
#include "tower/core/op_names.h"
#include "tower/core/op_registry.h"
#include "tower/core/ops.h"
#include "tower/core/ops/register_ops.h"
#include "tower/core/ops/shape_utils.h"

namespace tower {

GateActivation gate_activation_named(std::string_view name) {
  static constexpr std::pair<std::string_view, GateActivation> kNames[] = {
      {"linear", GateActivation::linear},
      {"tanh", GateActivation::tanh},
      {"sigmoid", GateActivation::sigmoid},
      {"relu", GateActivation::relu},
      {"softsign", GateActivation::softsign},
      {"hard_sigmoid", GateActivation::hard_sigmoid},
      {"hard_sigmoid_keras3", GateActivation::hard_sigmoid_keras3},
  };
  if (name.empty()) return GateActivation::linear;
  for (const auto& [known, value] : kNames)
    if (known == name) return value;
  raise<ValueError>(
      "activation \"{}\" cannot run inside a recurrent cell; tower's fused recurrent ops take linear, tanh, "
      "sigmoid, relu, softsign, hard_sigmoid and hard_sigmoid_keras3",
      name);
}

namespace {

using Specs = std::vector<TensorSpec>;
using Grads = std::vector<SymbolicTensor>;

Attrs recurrent_attrs(const ops::RecurrentArgs& args) {
  return {{"activation", args.activation},
          {"recurrent_activation", args.recurrent_activation},
          {"go_backwards", args.go_backwards},
          {"reset_after", args.reset_after}};
}

void check_attrs(const Attrs& attrs) {
  gate_activation_named(attrs.get_string("activation"));
  gate_activation_named(attrs.get_string("recurrent_activation"));
  attrs.get_bool("go_backwards");
  attrs.get_bool("reset_after");
}

void expect_dims(const TensorSpec& spec, const std::vector<std::int64_t>& dims, const char* what) {
  expect_rank(spec, static_cast<int>(dims.size()), what);
  for (std::size_t i = 0; i < dims.size(); ++i)
    if (!dims_match(spec.shape[static_cast<int>(i)], dims[i]))
      raise<ShapeError>("{} has shape {}, expected {}", what, spec.shape.to_string(), Shape(dims).to_string());
}

// The sizes every recurrent op checks its tensors against.
struct SequenceDims {
  std::int64_t time, batch, units;
};

// x_proj (T, B, gates·U) and recurrent_kernel (U, gates·U); the other inputs are checked by the caller.
SequenceDims sequence_dims(const TensorSpec& x_proj, const TensorSpec& recurrent_kernel, int gates) {
  expect_rank(x_proj, 3, "x_proj (time, batch, gates·units)");
  expect_floating(x_proj, "x_proj");
  expect_rank(recurrent_kernel, 2, "recurrent_kernel (units, gates·units)");
  expect_same_dtype(x_proj, recurrent_kernel, "x_proj", "recurrent_kernel");
  const std::int64_t units = recurrent_kernel.shape[0];
  if (units < 0) raise<ShapeError>("recurrent_kernel needs a known shape, got {}", recurrent_kernel.shape.to_string());
  if (!dims_match(recurrent_kernel.shape[1], gates * units))
    raise<ShapeError>("recurrent_kernel has shape {}: expected (units, {}·units)", recurrent_kernel.shape.to_string(),
                      gates);
  if (!dims_match(x_proj.shape[2], gates * units))
    raise<ShapeError>("x_proj has shape {} but recurrent_kernel {}: its last axis must be {}·units",
                      x_proj.shape.to_string(), recurrent_kernel.shape.to_string(), gates);
  return {x_proj.shape[0], x_proj.shape[1], units};
}

void expect_state(const TensorSpec& state, const TensorSpec& x_proj, const SequenceDims& d, const char* what) {
  expect_same_dtype(x_proj, state, "x_proj", what);
  expect_dims(state, {d.batch, d.units}, what);
}

// The optional mask after `count` inputs: (batch, time) of x_proj's dtype.
void expect_mask(const Specs& in, std::size_t count, const SequenceDims& d, const char* op) {
  if (in.size() != count && in.size() != count + 1)
    raise<ValueError>("{} takes {} inputs and an optional mask, got {}", op, count, in.size());
  if (in.size() == count + 1) {
    expect_same_dtype(in[0], in[count], "x_proj", "mask");
    expect_dims(in[count], {d.batch, d.time}, "mask (batch, time)");
  }
}

TensorSpec spec(const TensorSpec& like, std::vector<std::int64_t> dims) { return {Shape(std::move(dims)), like.dtype}; }

// ---- SimpleRNN ----------------------------------------------------------------------------------

Specs simple_rnn_shape(const Specs& in, const Attrs& attrs) {  // (x_proj, recurrent_kernel, h0[, mask])
  check_attrs(attrs);
  const SequenceDims d = sequence_dims(in.at(0), in.at(1), 1);
  expect_mask(in, 3, d, op_names::simple_rnn);
  expect_state(in[2], in[0], d, "h0");
  return {spec(in[0], {d.time, d.batch, d.units}), in[2]};
}

// (d_states, d_final, recurrent_kernel, h0, states[, mask]) -> {dx_proj, drecurrent_kernel, dh0}.
Specs simple_rnn_grad_shape(const Specs& in, const Attrs& attrs) {
  check_attrs(attrs);
  const SequenceDims d = sequence_dims(in.at(4), in.at(2), 1);
  expect_mask(in, 5, d, op_names::simple_rnn_grad);
  expect_dims(in[0], {d.time, d.batch, d.units}, "d_states");
  expect_state(in[1], in[4], d, "d_final");
  expect_state(in[3], in[4], d, "h0");
  return {in[4], in[2], in[3]};
}

// The node's optional mask (its input `count`), passed on to the gradient op.
void add_mask(const Node& node, std::size_t count, std::vector<SymbolicTensor>& inputs) {
  if (node.inputs().size() > count) inputs.push_back(node.inputs()[count]);
}

// A gradient op's outputs are the gradients of the node's inputs before the mask (which gets none).
Grads first_inputs(const Node& node, Grads grads) {
  grads.resize(node.inputs().size());
  return grads;
}

SymbolicTensor or_zeros(const SymbolicTensor& grad, const SymbolicTensor& like) {
  return grad.defined() ? grad : ops::zeros_like(like);
}

Grads simple_rnn_grad_fn(Node& node, const Grads& g) {
  const auto& in = node.inputs();
  std::vector<SymbolicTensor> inputs{or_zeros(g[0], node.output(0)), or_zeros(g[1], node.output(1)), in[1], in[2],
                                     node.output(0)};
  add_mask(node, 3, inputs);
  return first_inputs(node, node.graph().add(op_names::simple_rnn_grad, inputs, node.attrs()));
}

// ---- LSTM ---------------------------------------------------------------------------------------

Specs lstm_shape(const Specs& in, const Attrs& attrs) {  // (x_proj, recurrent_kernel, h0, c0[, mask])
  check_attrs(attrs);
  const SequenceDims d = sequence_dims(in.at(0), in.at(1), 4);
  expect_mask(in, 4, d, op_names::lstm);
  expect_state(in[2], in[0], d, "h0");
  expect_state(in[3], in[0], d, "c0");
  const TensorSpec states = spec(in[0], {d.time, d.batch, d.units});
  return {states, states, spec(in[0], {d.time, d.batch, 4 * d.units}), in[2], in[2]};
}

// (d_h, d_c, d_final_h, d_final_c, recurrent_kernel, h0, c0, h states, c states, gates[, mask])
// -> {dx_proj, drecurrent_kernel, dh0, dc0}.
Specs lstm_grad_shape(const Specs& in, const Attrs& attrs) {
  check_attrs(attrs);
  const SequenceDims d = sequence_dims(in.at(9), in.at(4), 4);
  expect_mask(in, 10, d, op_names::lstm_grad);
  for (std::size_t i : {0, 1, 7, 8}) expect_dims(in[i], {d.time, d.batch, d.units}, "d_h, d_c and the states");
  expect_state(in[2], in[9], d, "d_final_h");
  expect_state(in[3], in[9], d, "d_final_c");
  expect_state(in[5], in[9], d, "h0");
  expect_state(in[6], in[9], d, "c0");
  return {in[9], in[4], in[5], in[6]};
}

Grads lstm_grad_fn(Node& node, const Grads& g) {
  const auto& in = node.inputs();
  std::vector<SymbolicTensor> inputs{or_zeros(g[0], node.output(0)), or_zeros(g[1], node.output(1)),
                                     or_zeros(g[3], node.output(3)), or_zeros(g[4], node.output(4)),
                                     in[1], in[2], in[3], node.output(0), node.output(1), node.output(2)};
  add_mask(node, 4, inputs);
  return first_inputs(node, node.graph().add(op_names::lstm_grad, inputs, node.attrs()));
}

// ---- GRU ----------------------------------------------------------------------------------------

Specs gru_shape(const Specs& in, const Attrs& attrs) {  // (x_proj, recurrent_kernel, recurrent_bias, h0[, mask])
  check_attrs(attrs);
  const SequenceDims d = sequence_dims(in.at(0), in.at(1), 3);
  expect_mask(in, 4, d, op_names::gru);
  expect_same_dtype(in[0], in[2], "x_proj", "recurrent_bias");
  expect_dims(in[2], {3 * d.units}, "recurrent_bias (3·units,)");
  expect_state(in[3], in[0], d, "h0");
  return {spec(in[0], {d.time, d.batch, d.units}), spec(in[0], {d.time, d.batch, 4 * d.units}), in[3]};
}

// (d_states, d_final, recurrent_kernel, h0, states, gates[, mask]) -> {dx_proj, drecurrent_kernel,
// drecurrent_bias, dh0}.
Specs gru_grad_shape(const Specs& in, const Attrs& attrs) {
  check_attrs(attrs);
  expect_rank(in.at(0), 3, "d_states (time, batch, units)");
  expect_floating(in[0], "d_states");
  expect_rank(in.at(2), 2, "recurrent_kernel (units, 3·units)");
  const SequenceDims d{in[0].shape[0], in[0].shape[1], in[2].shape[0]};
  if (d.units < 0) raise<ShapeError>("recurrent_kernel needs a known shape, got {}", in[2].shape.to_string());
  expect_mask(in, 6, d, op_names::gru_grad);
  const std::int64_t u3 = 3 * d.units;
  expect_dims(in[2], {d.units, u3}, "recurrent_kernel (units, 3·units)");
  expect_dims(in[4], {d.time, d.batch, d.units}, "states");
  expect_dims(in[5], {d.time, d.batch, 4 * d.units}, "gates");
  expect_state(in[1], in[0], d, "d_final");
  expect_state(in[3], in[0], d, "h0");
  return {spec(in[0], {d.time, d.batch, u3}), in[2], spec(in[0], {u3}), in[3]};
}

Grads gru_grad_fn(Node& node, const Grads& g) {
  const auto& in = node.inputs();
  std::vector<SymbolicTensor> inputs{or_zeros(g[0], node.output(0)), or_zeros(g[2], node.output(2)), in[1], in[3],
                                     node.output(0), node.output(1)};
  add_mask(node, 4, inputs);
  return first_inputs(node, node.graph().add(op_names::gru_grad, inputs, node.attrs()));
}

std::vector<SymbolicTensor> with_mask(std::vector<SymbolicTensor> inputs, const SymbolicTensor& mask) {
  if (mask.defined()) inputs.push_back(mask);
  return inputs;
}

}  // namespace

namespace ops {

std::vector<SymbolicTensor> simple_rnn(const SymbolicTensor& x_proj, const SymbolicTensor& recurrent_kernel,
                                       const SymbolicTensor& h0, const SymbolicTensor& mask, const RecurrentArgs& args) {
  return x_proj.graph().add(op_names::simple_rnn, with_mask({x_proj, recurrent_kernel, h0}, mask),
                            recurrent_attrs(args));
}

std::vector<SymbolicTensor> lstm(const SymbolicTensor& x_proj, const SymbolicTensor& recurrent_kernel,
                                 const SymbolicTensor& h0, const SymbolicTensor& c0, const SymbolicTensor& mask,
                                 const RecurrentArgs& args) {
  return x_proj.graph().add(op_names::lstm, with_mask({x_proj, recurrent_kernel, h0, c0}, mask),
                            recurrent_attrs(args));
}

std::vector<SymbolicTensor> gru(const SymbolicTensor& x_proj, const SymbolicTensor& recurrent_kernel,
                                const SymbolicTensor& recurrent_bias, const SymbolicTensor& h0,
                                const SymbolicTensor& mask, const RecurrentArgs& args) {
  return x_proj.graph().add(op_names::gru, with_mask({x_proj, recurrent_kernel, recurrent_bias, h0}, mask),
                            recurrent_attrs(args));
}

}  // namespace ops

void register_recurrent_ops() {
  register_op({.name = op_names::simple_rnn, .shape = simple_rnn_shape, .grad = simple_rnn_grad_fn});
  register_op({.name = op_names::simple_rnn_grad, .shape = simple_rnn_grad_shape});
  register_op({.name = op_names::lstm, .shape = lstm_shape, .grad = lstm_grad_fn});
  register_op({.name = op_names::lstm_grad, .shape = lstm_grad_shape});
  register_op({.name = op_names::gru, .shape = gru_shape, .grad = gru_grad_fn});
  register_op({.name = op_names::gru_grad, .shape = gru_grad_shape});
}

}  // namespace tower
