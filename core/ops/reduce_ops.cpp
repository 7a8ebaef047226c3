// Reductions over axes: sum, mean, max (with its gradient), argmax, and broadcast_reduced (the
// gradient of sum and mean: a reduced tensor spread back over the input's shape).
#include "tower/core/op_names.h"
#include "tower/core/op_registry.h"
#include "tower/core/ops.h"
#include "tower/core/ops/register_ops.h"
#include "tower/core/ops/shape_utils.h"

namespace tower {

namespace {

using Grads = std::vector<SymbolicTensor>;

Attrs reduce_attrs(const ops::Ints& axes, bool keepdims) { return {{"axes", axes}, {"keepdims", keepdims}}; }

Shape reduced_shape(const Shape& in, const std::vector<int>& axes, bool keepdims) {
  std::vector<std::int64_t> out;
  for (int d = 0; d < in.rank(); ++d) {
    bool reduced = std::find(axes.begin(), axes.end(), d) != axes.end();
    if (!reduced) out.push_back(in[d]);
    else if (keepdims) out.push_back(1);
  }
  return Shape(std::move(out));
}

std::vector<TensorSpec> reduce_shape(const std::vector<TensorSpec>& in, const Attrs& attrs) {
  expect_num_inputs(in, 1);
  auto axes = normalize_axes(attrs.get_ints("axes"), in[0].shape.rank());
  return {TensorSpec{reduced_shape(in[0].shape, axes, attrs.get_bool("keepdims")), in[0].dtype}};
}

// dy (reduced shape) spread over x's shape; divided by the reduced count when `mean`.
SymbolicTensor broadcast_reduced(const SymbolicTensor& dy, const SymbolicTensor& x, const Attrs& reduce, bool mean) {
  Attrs attrs = reduce;
  attrs.set("mean", mean);
  return dy.graph().add1(op_names::broadcast_reduced, {dy, x}, attrs);
}

}  // namespace

namespace ops {

SymbolicTensor reduce_sum(const SymbolicTensor& x, Ints axes, bool keepdims) {
  return x.graph().add1(op_names::reduce_sum, {x}, reduce_attrs(axes, keepdims));
}
SymbolicTensor reduce_mean(const SymbolicTensor& x, Ints axes, bool keepdims) {
  return x.graph().add1(op_names::reduce_mean, {x}, reduce_attrs(axes, keepdims));
}
SymbolicTensor reduce_max(const SymbolicTensor& x, Ints axes, bool keepdims) {
  return x.graph().add1(op_names::reduce_max, {x}, reduce_attrs(axes, keepdims));
}
SymbolicTensor reduce_max_grad(const SymbolicTensor& dy, const SymbolicTensor& x, const SymbolicTensor& y, Ints axes,
                               bool keepdims) {
  return x.graph().add1(op_names::reduce_max_grad, {dy, x, y}, reduce_attrs(axes, keepdims));
}
SymbolicTensor argmax(const SymbolicTensor& x, int axis) {
  return x.graph().add1(op_names::argmax, {x}, {{"axis", static_cast<std::int64_t>(axis)}});
}

}  // namespace ops

void register_reduce_ops() {
  register_op({.name = op_names::reduce_sum, .shape = reduce_shape, .grad = [](Node& n, const Grads& dy) -> Grads {
                 return {broadcast_reduced(dy[0], n.inputs()[0], n.attrs(), false)};
               }});
  register_op({.name = op_names::reduce_mean,
               .shape =
                   [](const std::vector<TensorSpec>& in, const Attrs& attrs) {
                     expect_num_inputs(in, 1);
                     expect_floating(in[0], "x");
                     return reduce_shape(in, attrs);
                   },
               .grad = [](Node& n, const Grads& dy) -> Grads {
                 return {broadcast_reduced(dy[0], n.inputs()[0], n.attrs(), true)};
               }});
  register_op({.name = op_names::reduce_max, .shape = reduce_shape, .grad = [](Node& n, const Grads& dy) -> Grads {
                 return {ops::reduce_max_grad(dy[0], n.inputs()[0], n.output(0), n.attrs().get_ints("axes"),
                                              n.attrs().get_bool("keepdims"))};
               }});
  register_op({.name = op_names::reduce_max_grad, .shape = [](const std::vector<TensorSpec>& in, const Attrs&) {
                 expect_num_inputs(in, 3);
                 return std::vector{in[1]};
               }});
  register_op({.name = op_names::broadcast_reduced,
               .shape =
                   [](const std::vector<TensorSpec>& in, const Attrs& attrs) {
                     expect_num_inputs(in, 2);
                     auto axes = normalize_axes(attrs.get_ints("axes"), in[1].shape.rank());
                     Shape expected = reduced_shape(in[1].shape, axes, attrs.get_bool("keepdims"));
                     if (!expected.compatible_with(in[0].shape))
                       raise<ShapeError>("dy has shape {}, expected {}", in[0].shape.to_string(), expected.to_string());
                     return std::vector{TensorSpec{in[1].shape, in[0].dtype}};
                   },
               .grad = [](Node& n, const Grads& dy) -> Grads {
                 // Its transpose: sum (or mean) over the same axes.
                 const auto& axes = n.attrs().get_ints("axes");
                 bool keepdims = n.attrs().get_bool("keepdims");
                 auto g = n.attrs().get_bool("mean") ? ops::reduce_mean(dy[0], axes, keepdims)
                                                     : ops::reduce_sum(dy[0], axes, keepdims);
                 return {g, {}};
               }});
  register_op({.name = op_names::argmax, .shape = [](const std::vector<TensorSpec>& in, const Attrs& attrs) {
                 expect_num_inputs(in, 1);
                 int axis = in[0].shape.normalize_axis(static_cast<int>(attrs.get_int("axis")));
                 return std::vector{TensorSpec{reduced_shape(in[0].shape, {axis}, false), DType::int64}};
               }});
}

}  // namespace tower
