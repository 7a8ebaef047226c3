// Loss ops: (sparse) softmax cross-entropy fused with its gradient, mean squared / absolute error,
// and the fused gradient ops they use.
#include <cstdint>

#include "tower/core/op_names.h"
#include "tower/core/op_registry.h"
#include "tower/core/ops.h"
#include "tower/core/ops/register_ops.h"
#include "tower/core/ops/shape_utils.h"

namespace tower {

namespace ops {

SymbolicTensor softmax_cross_entropy(const SymbolicTensor& logits, const SymbolicTensor& labels) {
  return logits.graph().add(op_names::softmax_cross_entropy, {logits, labels})[0];
}
SymbolicTensor sparse_softmax_cross_entropy(const SymbolicTensor& logits, const SymbolicTensor& labels) {
  return logits.graph().add(op_names::sparse_softmax_cross_entropy, {logits, labels})[0];
}
SymbolicTensor mean_squared_error(const SymbolicTensor& y_true, const SymbolicTensor& y_pred) {
  return y_true.graph().add1(op_names::mean_squared_error, {y_true, y_pred});
}
SymbolicTensor mean_absolute_error(const SymbolicTensor& y_true, const SymbolicTensor& y_pred) {
  return y_true.graph().add1(op_names::mean_absolute_error, {y_true, y_pred});
}

}  // namespace ops

namespace {

using Grads = std::vector<SymbolicTensor>;

// The more specific of two compatible shapes (a known dimension wins over an unknown one).
Shape merge_shapes(const Shape& a, const Shape& b) {
  std::vector<std::int64_t> dims = a.dims();
  for (int i = 0; i < a.rank(); ++i)
    if (dims[static_cast<std::size_t>(i)] < 0) dims[static_cast<std::size_t>(i)] = b[i];
  return Shape(std::move(dims));
}

Shape drop_last(const Shape& s) {
  return Shape(std::vector<std::int64_t>(s.dims().begin(), s.dims().end() - 1));
}

// logits: (batch, classes) float, labels: (batch, classes) same dtype
// -> {loss (batch,), backprop (batch, classes)}.
std::vector<TensorSpec> softmax_cross_entropy_shape(const std::vector<TensorSpec>& in, const Attrs&) {
  expect_num_inputs(in, 2);
  expect_floating(in[0], "logits");
  expect_same_dtype(in[0], in[1], "logits", "labels");
  expect_rank(in[0], 2, "logits");
  if (in[1].shape.rank() != 2 || !in[0].shape.compatible_with(in[1].shape))
    raise<ShapeError>(
        "labels must have the logits' shape (batch, classes), got logits {} and labels {} (one-hot encode "
        "integer labels or use sparse_softmax_cross_entropy)",
        in[0].shape.to_string(), in[1].shape.to_string());
  Shape shape = merge_shapes(in[0].shape, in[1].shape);
  return {TensorSpec{Shape{shape[0]}, in[0].dtype}, TensorSpec{shape, in[0].dtype}};
}

// logits: (batch, classes) float, labels: (batch,) integer -> {loss (batch,), backprop (batch, classes)}.
std::vector<TensorSpec> sparse_softmax_cross_entropy_shape(const std::vector<TensorSpec>& in, const Attrs&) {
  expect_num_inputs(in, 2);
  expect_floating(in[0], "logits");
  expect_rank(in[0], 2, "logits");
  expect_integer(in[1], "labels");
  if (in[1].shape.rank() != 1 || !dims_match(in[0].shape[0], in[1].shape[0]))
    raise<ShapeError>(
        "labels must have shape (batch,) with the logits' batch, got logits {} and labels {} (squeeze "
        "labels of shape (batch, 1); for one-hot labels use softmax_cross_entropy)",
        in[0].shape.to_string(), in[1].shape.to_string());
  Shape shape = in[0].shape;
  if (shape[0] < 0) shape[0] = in[1].shape[0];
  return {TensorSpec{Shape{shape[0]}, in[0].dtype}, TensorSpec{shape, in[0].dtype}};
}

// softmax_cross_entropy_grad(dloss (batch,), backprop (batch, classes)) -> dloss[:, None] * backprop.
std::vector<TensorSpec> softmax_cross_entropy_grad_shape(const std::vector<TensorSpec>& in, const Attrs&) {
  expect_num_inputs(in, 2);
  expect_floating(in[1], "backprop");
  expect_same_dtype(in[0], in[1], "dloss", "backprop");
  expect_rank(in[0], 1, "dloss");
  expect_rank(in[1], 2, "backprop");
  if (!dims_match(in[0].shape[0], in[1].shape[0]))
    raise<ShapeError>("dloss {} and backprop {} must have the same batch", in[0].shape.to_string(),
                      in[1].shape.to_string());
  Shape shape = in[1].shape;
  if (shape[0] < 0) shape[0] = in[0].shape[0];
  return {TensorSpec{shape, in[1].dtype}};
}

// y_true, y_pred: (..., d) of one float dtype -> (...).
std::vector<TensorSpec> mean_error_shape(const std::vector<TensorSpec>& in, const Attrs&) {
  expect_num_inputs(in, 2);
  expect_floating(in[1], "y_pred");
  expect_same_dtype(in[0], in[1], "y_true", "y_pred");
  expect_min_rank(in[1], 1, "y_pred");
  if (in[0].shape.rank() != in[1].shape.rank() || !in[0].shape.compatible_with(in[1].shape))
    raise<ShapeError>("y_true and y_pred must have the same shape, got {} and {} (reshape or cast y_true to match)",
                      in[0].shape.to_string(), in[1].shape.to_string());
  return {TensorSpec{drop_last(merge_shapes(in[1].shape, in[0].shape)), in[1].dtype}};
}

// (dloss (...), y_true (..., d), y_pred (..., d)) -> d loss / d y_pred (..., d).
std::vector<TensorSpec> mean_error_grad_shape(const std::vector<TensorSpec>& in, const Attrs& attrs) {
  expect_num_inputs(in, 3);
  TensorSpec pred = mean_error_shape({in[1], in[2]}, attrs)[0];
  expect_same_dtype(in[0], in[2], "dloss", "y_pred");
  if (in[0].shape.rank() != pred.shape.rank() || !in[0].shape.compatible_with(pred.shape))
    raise<ShapeError>("dloss must have shape {} (y_pred's without its last axis), got {}", pred.shape.to_string(),
                      in[0].shape.to_string());
  return {TensorSpec{merge_shapes(in[2].shape, in[1].shape), in[2].dtype}};
}

// Gradient of the fused (sparse) cross-entropy: dlogits = dloss[:, None] * backprop. The second
// output (backprop = softmax(logits) - labels) carries a gradient only in second-order use; it
// adds softmax_grad(g, softmax(logits)) to dlogits. Labels get no gradient.
SymbolicTensor cross_entropy_logits_grad(Node& node, const Grads& g, const SymbolicTensor& softmax_of_logits) {
  SymbolicTensor backprop = node.output(1);
  SymbolicTensor dlogits;
  if (g[0].defined()) dlogits = node.graph().add1(op_names::softmax_cross_entropy_grad, {g[0], backprop});
  if (g[1].defined()) {
    SymbolicTensor second = ops::softmax_grad(g[1], softmax_of_logits, -1);
    dlogits = dlogits.defined() ? ops::add(dlogits, second) : second;
  }
  return dlogits;
}

}  // namespace

void register_loss_ops() {
  register_op({.name = op_names::softmax_cross_entropy,
               .shape = softmax_cross_entropy_shape,
               .grad = [](Node& node, const Grads& g) -> Grads {
                 SymbolicTensor probs;  // softmax(logits) = backprop + labels, built only when needed
                 if (g[1].defined()) probs = ops::add(node.output(1), node.inputs()[1]);
                 return {cross_entropy_logits_grad(node, g, probs), SymbolicTensor{}};
               }});
  register_op({.name = op_names::sparse_softmax_cross_entropy,
               .shape = sparse_softmax_cross_entropy_shape,
               .grad = [](Node& node, const Grads& g) -> Grads {
                 SymbolicTensor probs;
                 if (g[1].defined()) probs = ops::softmax(node.inputs()[0], -1);
                 return {cross_entropy_logits_grad(node, g, probs), SymbolicTensor{}};
               }});
  // d/d(dloss) = sum(g * backprop, -1); d/d(backprop) = dloss[:, None] * g.
  register_op({.name = op_names::softmax_cross_entropy_grad,
               .shape = softmax_cross_entropy_grad_shape,
               .grad = [](Node& node, const Grads& g) -> Grads {
                 const SymbolicTensor &dloss = node.inputs()[0], &backprop = node.inputs()[1];
                 return {ops::reduce_sum(ops::multiply(g[0], backprop), {-1}),
                         node.graph().add1(op_names::softmax_cross_entropy_grad, {dloss, g[0]})};
               }});

  // mean_squared_error = mean((y_pred - y_true)^2, -1); its gradient op gives d/dy_pred, and
  // d/dy_true is its negative.
  register_op({.name = op_names::mean_squared_error,
               .shape = mean_error_shape,
               .grad = [](Node& node, const Grads& g) -> Grads {
                 SymbolicTensor d_pred =
                     node.graph().add1(op_names::mean_squared_error_grad, {g[0], node.inputs()[0], node.inputs()[1]});
                 return {ops::negative(d_pred), d_pred};
               }});
  register_op({.name = op_names::mean_absolute_error,
               .shape = mean_error_shape,
               .grad = [](Node& node, const Grads& g) -> Grads {
                 SymbolicTensor d_pred =
                     node.graph().add1(op_names::mean_absolute_error_grad, {g[0], node.inputs()[0], node.inputs()[1]});
                 return {ops::negative(d_pred), d_pred};
               }});
  // mean_squared_error_grad(dloss, t, p) = (2 / d) dloss[..., None] (p - t). It is linear in
  // (p - t), so the gradient along p is the same op applied to g with t = 0.
  register_op({.name = op_names::mean_squared_error_grad,
               .shape = mean_error_grad_shape,
               .grad = [](Node& node, const Grads& g) -> Grads {
                 const SymbolicTensor &dloss = node.inputs()[0], &t = node.inputs()[1], &p = node.inputs()[2];
                 SymbolicTensor d_dloss = ops::scale(ops::reduce_mean(ops::multiply(g[0], ops::subtract(p, t)), {-1}), 2.0);
                 SymbolicTensor d_p =
                     node.graph().add1(op_names::mean_squared_error_grad, {dloss, ops::zeros_like(g[0]), g[0]});
                 return {d_dloss, ops::negative(d_p), d_p};
               }});
  // mean_absolute_error_grad(dloss, t, p) = dloss[..., None] sign(p - t) / d: piecewise constant in t, p.
  register_op({.name = op_names::mean_absolute_error_grad,
               .shape = mean_error_grad_shape,
               .grad = [](Node& node, const Grads& g) -> Grads {
                 const SymbolicTensor &t = node.inputs()[1], &p = node.inputs()[2];
                 SymbolicTensor d_dloss = ops::reduce_mean(ops::multiply(g[0], ops::sign(ops::subtract(p, t))), {-1});
                 return {d_dloss, SymbolicTensor{}, SymbolicTensor{}};
               }});
}

}  // namespace tower
