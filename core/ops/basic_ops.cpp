// Basic ops: graph sources (placeholder, constant, variable), identity, fills, cast, assignment.
#include "tower/core/op_names.h"
#include "tower/core/op_registry.h"
#include "tower/core/ops.h"
#include "tower/core/ops/register_ops.h"
#include "tower/core/ops/shape_utils.h"

namespace tower {

namespace ops {

SymbolicTensor identity(const SymbolicTensor& x) { return x.graph().add1(op_names::identity, {x}); }
SymbolicTensor stop_gradient(const SymbolicTensor& x) { return x.graph().add1(op_names::stop_gradient, {x}); }
SymbolicTensor fill_like(const SymbolicTensor& x, double value) {
  return x.graph().add1(op_names::fill_like, {x}, {{"value", value}});
}
SymbolicTensor zeros_like(const SymbolicTensor& x) { return fill_like(x, 0.0); }
SymbolicTensor ones_like(const SymbolicTensor& x) { return fill_like(x, 1.0); }
SymbolicTensor cast(const SymbolicTensor& x, DType dtype) {
  if (x.dtype() == dtype) return x;
  return x.graph().add1(op_names::cast, {x}, {{"dtype", dtype}});
}
Node* assign(const SymbolicTensor& var, const SymbolicTensor& value) {
  return &var.graph().add_node(op_names::assign, {var, value});
}
Node* assign_add(const SymbolicTensor& var, const SymbolicTensor& value) {
  return &var.graph().add_node(op_names::assign_add, {var, value});
}

}  // namespace ops

namespace {

std::vector<TensorSpec> same_as_input(const std::vector<TensorSpec>& in, const Attrs&) {
  expect_num_inputs(in, 1);
  return {in[0]};
}

std::vector<TensorSpec> assign_shape(const std::vector<TensorSpec>& in, const Attrs&) {
  expect_num_inputs(in, 2);
  expect_same_dtype(in[0], in[1], "variable", "value");
  if (!in[0].shape.compatible_with(in[1].shape))
    raise<ShapeError>("value of shape {} cannot be assigned to a variable of shape {}", in[1].shape.to_string(),
                      in[0].shape.to_string());
  return {};
}

std::vector<TensorSpec> no_shape_fn(const std::vector<TensorSpec>&, const Attrs&) {
  raise<Error>("source nodes are made by Graph::placeholder, constant and variable");
}

}  // namespace

void register_basic_ops() {
  // Sources: their output specs are set by the Graph and resolved by the Plan.
  register_op({.name = op_names::placeholder, .shape = no_shape_fn, .source = OpSource::placeholder});
  register_op({.name = op_names::constant, .shape = no_shape_fn, .source = OpSource::constant});
  register_op({.name = op_names::variable, .shape = no_shape_fn, .source = OpSource::variable});

  register_op({.name = op_names::identity,
               .shape = same_as_input,
               .grad = [](Node&, const std::vector<SymbolicTensor>& dy) { return std::vector{dy[0]}; },
               .alias_input = 0});
  register_op({.name = op_names::stop_gradient, .shape = same_as_input, .alias_input = 0});
  register_op({.name = op_names::fill_like, .shape = same_as_input});
  register_op({.name = op_names::cast,
               .shape =
                   [](const std::vector<TensorSpec>& in, const Attrs& attrs) {
                     expect_num_inputs(in, 1);
                     return std::vector{TensorSpec{in[0].shape, attrs.get_dtype("dtype")}};
                   },
               .grad =
                   [](Node& node, const std::vector<SymbolicTensor>& dy) {
                     DType from = node.inputs()[0].dtype();
                     if (!is_floating(from)) return std::vector<SymbolicTensor>{SymbolicTensor{}};
                     return std::vector{ops::cast(dy[0], from)};
                   }});
  register_op({.name = op_names::assign, .shape = assign_shape, .mutated_inputs = {0}});
  register_op({.name = op_names::assign_add, .shape = assign_shape, .mutated_inputs = {0}});
}

}  // namespace tower
