// Unary math, activations and softmax: builders, shape functions and gradients (with their *_grad ops).
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "tower/core/op_names.h"
#include "tower/core/op_registry.h"
#include "tower/core/ops.h"
#include "tower/core/ops/register_ops.h"
#include "tower/core/ops/shape_utils.h"

namespace tower {

namespace ops {

SymbolicTensor negative(const SymbolicTensor& x) { return x.graph().add1(op_names::negative, {x}); }
SymbolicTensor exp(const SymbolicTensor& x) { return x.graph().add1(op_names::exp, {x}); }
SymbolicTensor log(const SymbolicTensor& x) { return x.graph().add1(op_names::log, {x}); }
SymbolicTensor erf(const SymbolicTensor& x) { return x.graph().add1(op_names::erf, {x}); }
SymbolicTensor sqrt(const SymbolicTensor& x) { return x.graph().add1(op_names::sqrt, {x}); }
SymbolicTensor square(const SymbolicTensor& x) { return x.graph().add1(op_names::square, {x}); }
SymbolicTensor abs(const SymbolicTensor& x) { return x.graph().add1(op_names::abs, {x}); }
SymbolicTensor sign(const SymbolicTensor& x) { return x.graph().add1(op_names::sign, {x}); }
SymbolicTensor relu(const SymbolicTensor& x) { return x.graph().add1(op_names::relu, {x}); }
SymbolicTensor leaky_relu(const SymbolicTensor& x, double alpha) {
  return x.graph().add1(op_names::leaky_relu, {x}, {{"alpha", alpha}});
}
SymbolicTensor elu(const SymbolicTensor& x, double alpha) {
  return x.graph().add1(op_names::elu, {x}, {{"alpha", alpha}});
}
SymbolicTensor sigmoid(const SymbolicTensor& x) { return x.graph().add1(op_names::sigmoid, {x}); }
SymbolicTensor tanh(const SymbolicTensor& x) { return x.graph().add1(op_names::tanh, {x}); }

namespace {

// dy = a max pooling's gradient over y (conv, relu, pool): the pooled gradient g, the pooled values m,
// and the routing of a pooled gradient back to y's shape by the same pooling.
struct PooledGradient {
  SymbolicTensor g, m;
  std::function<SymbolicTensor(const SymbolicTensor&)> route;
};

std::optional<PooledGradient> pooled_gradient(const SymbolicTensor& dy, const SymbolicTensor& y) {
  const Node& from = *dy.node();
  if (from.op() == op_names::max_pool2d_grad && from.inputs()[1] == y) {  // (g, y, m)
    const SymbolicTensor& m = from.inputs()[2];
    return PooledGradient{from.inputs()[0], m, [&from, y, m](const SymbolicTensor& d) {
                            return d.graph().add1(op_names::max_pool2d_grad, {d, y, m}, from.attrs());
                          }};
  }
  if (from.op() == op_names::max_pool2d_with_argmax_grad) {  // (g, argmax of max_pool2d_with_argmax(y))
    const SymbolicTensor& argmax = from.inputs()[1];
    Node& pool = *argmax.node();
    if (pool.op() == op_names::max_pool2d_with_argmax && pool.inputs()[0] == y)
      return PooledGradient{from.inputs()[0], pool.output(0), [&from, argmax](const SymbolicTensor& d) {
                              return d.graph().add1(op_names::max_pool2d_with_argmax_grad, {d, argmax}, from.attrs());
                            }};
  }
  return std::nullopt;
}

}  // namespace

SymbolicTensor relu_grad(const SymbolicTensor& dy, const SymbolicTensor& y) {
  // A ReLU under a max pooling (a convnet's conv, relu, pool): dy = max_pool2d_grad(g, y, m) is nonzero
  // only where y equals its window's max m, so masking dy by y > 0 is masking g by m > 0 before the
  // routing, exactly: one pass over the pooled tensor instead of one over the larger activation.
  if (auto p = pooled_gradient(dy, y)) return p->route(relu_grad(p->g, p->m));
  return dy.graph().add1(op_names::relu_grad, {dy, y});
}

std::vector<SymbolicTensor> bias_add_relu_grad(const SymbolicTensor& dy, const SymbolicTensor& y) {
  // Under a max pooling, as relu_grad: the masked pooled gradient is routed, and the bias's gradient is
  // its sum, each pooled value landing on exactly one position of dz (a NaN window's is masked to 0).
  if (auto p = pooled_gradient(dy, y)) {
    auto pooled = bias_add_relu_grad(p->g, p->m);
    return {p->route(pooled[0]), pooled[1]};
  }
  return dy.graph().add(op_names::bias_add_relu_grad, {dy, y});
}
SymbolicTensor leaky_relu_grad(const SymbolicTensor& dy, const SymbolicTensor& x, double alpha) {
  return dy.graph().add1(op_names::leaky_relu_grad, {dy, x}, {{"alpha", alpha}});
}
SymbolicTensor elu_grad(const SymbolicTensor& dy, const SymbolicTensor& x, double alpha) {
  return dy.graph().add1(op_names::elu_grad, {dy, x}, {{"alpha", alpha}});
}
SymbolicTensor sigmoid_grad(const SymbolicTensor& dy, const SymbolicTensor& y) {
  return dy.graph().add1(op_names::sigmoid_grad, {dy, y});
}
SymbolicTensor tanh_grad(const SymbolicTensor& dy, const SymbolicTensor& y) {
  return dy.graph().add1(op_names::tanh_grad, {dy, y});
}

SymbolicTensor softmax(const SymbolicTensor& x, int axis) {
  return x.graph().add1(op_names::softmax, {x}, {{"axis", static_cast<std::int64_t>(axis)}});
}
SymbolicTensor log_softmax(const SymbolicTensor& x, int axis) {
  return x.graph().add1(op_names::log_softmax, {x}, {{"axis", static_cast<std::int64_t>(axis)}});
}
SymbolicTensor softmax_grad(const SymbolicTensor& dy, const SymbolicTensor& y, int axis) {
  return dy.graph().add1(op_names::softmax_grad, {dy, y}, {{"axis", static_cast<std::int64_t>(axis)}});
}
SymbolicTensor log_softmax_grad(const SymbolicTensor& dy, const SymbolicTensor& y, int axis) {
  return dy.graph().add1(op_names::log_softmax_grad, {dy, y}, {{"axis", static_cast<std::int64_t>(axis)}});
}

}  // namespace ops

namespace {

using Grads = std::vector<SymbolicTensor>;

// One input of any CPU dtype (negative, abs, sign, square also work on integers, as in NumPy/TF).
std::vector<TensorSpec> unary_any_shape(const std::vector<TensorSpec>& in, const Attrs&) {
  expect_num_inputs(in, 1);
  return {in[0]};
}

std::vector<TensorSpec> unary_float_shape(const std::vector<TensorSpec>& in, const Attrs&) {
  expect_num_inputs(in, 1);
  expect_floating(in[0], "x");
  return {in[0]};
}

// The more specific of two compatible shapes (a known dimension wins over an unknown one).
Shape merge_shapes(const Shape& a, const Shape& b) {
  std::vector<std::int64_t> dims = a.dims();
  for (int i = 0; i < a.rank(); ++i)
    if (dims[static_cast<std::size_t>(i)] < 0) dims[static_cast<std::size_t>(i)] = b[i];
  return Shape(std::move(dims));
}

// (dy, y-or-x) of one shape and float dtype -> dy's spec. `what` names the second input.
TensorSpec elementwise_grad_spec(const std::vector<TensorSpec>& in, const char* what) {
  expect_num_inputs(in, 2);
  expect_floating(in[0], "dy");
  expect_same_dtype(in[0], in[1], "dy", what);
  if (in[0].shape.rank() != in[1].shape.rank() || !in[0].shape.compatible_with(in[1].shape))
    raise<ShapeError>("dy and {} must have the same shape, got {} and {}", what, in[0].shape.to_string(),
                      in[1].shape.to_string());
  return {merge_shapes(in[0].shape, in[1].shape), in[0].dtype};
}

std::vector<TensorSpec> grad_of_y_shape(const std::vector<TensorSpec>& in, const Attrs&) {
  return {elementwise_grad_spec(in, "y")};
}
std::vector<TensorSpec> grad_of_x_shape(const std::vector<TensorSpec>& in, const Attrs&) {
  return {elementwise_grad_spec(in, "x")};
}

std::vector<TensorSpec> softmax_shape(const std::vector<TensorSpec>& in, const Attrs& attrs) {
  expect_num_inputs(in, 1);
  expect_floating(in[0], "x");
  expect_min_rank(in[0], 1, "x");
  in[0].shape.normalize_axis(static_cast<int>(attrs.get_int("axis")));  // the Graph names the op
  return {in[0]};
}

std::vector<TensorSpec> softmax_grad_shape(const std::vector<TensorSpec>& in, const Attrs& attrs) {
  TensorSpec out = elementwise_grad_spec(in, "y");
  expect_min_rank(out, 1, "y");
  out.shape.normalize_axis(static_cast<int>(attrs.get_int("axis")));
  return {out};
}

int axis_attr(const Node& node) { return static_cast<int>(node.attrs().get_int("axis")); }

// Integer inputs (the ops that accept them) get no gradient.
bool differentiable_input(const Node& node) { return is_floating(node.inputs()[0].dtype()); }

}  // namespace

void register_activation_ops() {
  using namespace ops;

  // ---- unary math ----
  register_op({.name = op_names::negative, .shape = unary_any_shape, .grad = [](Node& node, const Grads& dy) -> Grads {
                 if (!differentiable_input(node)) return {SymbolicTensor{}};
                 return {negative(dy[0])};
               }});
  register_op({.name = op_names::exp, .shape = unary_float_shape, .grad = [](Node& node, const Grads& dy) -> Grads {
                 return {multiply(dy[0], node.output(0))};  // d exp(x) = exp(x)
               }});
  register_op({.name = op_names::log, .shape = unary_float_shape, .grad = [](Node& node, const Grads& dy) -> Grads {
                 return {divide(dy[0], node.inputs()[0])};
               }});
  register_op({.name = op_names::erf, .shape = unary_float_shape, .grad = [](Node& node, const Grads& dy) -> Grads {
                 const SymbolicTensor& x = node.inputs()[0];  // d erf(x) = 2 / sqrt(pi) exp(-x^2)
                 return {multiply(dy[0], scale(exp(negative(square(x))), 1.12837916709551257390))};
               }});
  register_op({.name = op_names::sqrt, .shape = unary_float_shape, .grad = [](Node& node, const Grads& dy) -> Grads {
                 return {divide(dy[0], scale(node.output(0), 2.0))};  // 1 / (2 sqrt(x))
               }});
  register_op({.name = op_names::square, .shape = unary_any_shape, .grad = [](Node& node, const Grads& dy) -> Grads {
                 if (!differentiable_input(node)) return {SymbolicTensor{}};
                 return {multiply(dy[0], scale(node.inputs()[0], 2.0))};
               }});
  register_op({.name = op_names::abs, .shape = unary_any_shape, .grad = [](Node& node, const Grads& dy) -> Grads {
                 if (!differentiable_input(node)) return {SymbolicTensor{}};
                 return {multiply(dy[0], sign(node.inputs()[0]))};
               }});
  register_op({.name = op_names::sign, .shape = unary_any_shape});  // piecewise constant: no gradient

  // ---- activations: gradients through the fused *_grad ops ----
  register_op({.name = op_names::relu, .shape = unary_float_shape, .grad = [](Node& node, const Grads& dy) -> Grads {
                 return {relu_grad(dy[0], node.output(0))};
               }});
  register_op(
      {.name = op_names::leaky_relu, .shape = unary_float_shape, .grad = [](Node& node, const Grads& dy) -> Grads {
         return {leaky_relu_grad(dy[0], node.inputs()[0], node.attrs().get_float("alpha"))};
       }});
  register_op({.name = op_names::elu, .shape = unary_float_shape, .grad = [](Node& node, const Grads& dy) -> Grads {
                 return {elu_grad(dy[0], node.inputs()[0], node.attrs().get_float("alpha"))};
               }});
  register_op({.name = op_names::sigmoid, .shape = unary_float_shape, .grad = [](Node& node, const Grads& dy) -> Grads {
                 return {sigmoid_grad(dy[0], node.output(0))};
               }});
  register_op({.name = op_names::tanh, .shape = unary_float_shape, .grad = [](Node& node, const Grads& dy) -> Grads {
                 return {tanh_grad(dy[0], node.output(0))};
               }});

  // ---- the *_grad ops are differentiable too (second derivatives). g is the incoming gradient. ----
  // relu_grad(dy, y) = dy * (y > 0): linear in dy, piecewise constant in y.
  register_op({.name = op_names::relu_grad, .shape = grad_of_y_shape, .grad = [](Node& node, const Grads& g) -> Grads {
                 return {relu_grad(g[0], node.inputs()[1]), SymbolicTensor{}};
               }});
  // bias_add_relu_grad(dy, y) = {dz = relu_grad(dy, y), sum of dz over all but the last axis}: both
  // linear in dy, so the incoming gradients of dz and of the sum (broadcast) add before the mask.
  register_op({.name = op_names::bias_add_relu_grad,
               .shape = [](const std::vector<TensorSpec>& in, const Attrs&) {
                 const TensorSpec dz = elementwise_grad_spec(in, "y");
                 expect_min_rank(dz, 1, "dy");
                 return std::vector{dz, TensorSpec{Shape{dz.shape.dim(-1)}, dz.dtype}};
               },
               .grad = [](Node& node, const Grads& g) -> Grads {
                 SymbolicTensor d = g[0];
                 if (g[1].defined()) d = d.defined() ? add(d, g[1]) : broadcast_like(g[1], node.inputs()[0]);
                 if (!d.defined()) return Grads(2);
                 return {relu_grad(d, node.inputs()[1]), SymbolicTensor{}};
               }});
  register_op(
      {.name = op_names::leaky_relu_grad, .shape = grad_of_x_shape, .grad = [](Node& node, const Grads& g) -> Grads {
         return {leaky_relu_grad(g[0], node.inputs()[1], node.attrs().get_float("alpha")), SymbolicTensor{}};
       }});
  // elu_grad(dy, x) = dy * (x > 0 ? 1 : alpha e^x); d/dx = dy * (x > 0 ? 0 : alpha e^x), which is
  // elu_grad(dy, x) - relu_grad(dy, x) (relu_grad keeps dy where x > 0).
  register_op({.name = op_names::elu_grad, .shape = grad_of_x_shape, .grad = [](Node& node, const Grads& g) -> Grads {
                 const SymbolicTensor &dy = node.inputs()[0], &x = node.inputs()[1];
                 double alpha = node.attrs().get_float("alpha");
                 SymbolicTensor dx = multiply(g[0], subtract(node.output(0), relu_grad(dy, x)));
                 return {elu_grad(g[0], x, alpha), dx};
               }});
  // sigmoid_grad(dy, y) = dy y (1 - y); d/dy = dy (1 - 2y).
  register_op(
      {.name = op_names::sigmoid_grad, .shape = grad_of_y_shape, .grad = [](Node& node, const Grads& g) -> Grads {
         const SymbolicTensor &dy = node.inputs()[0], &y = node.inputs()[1];
         SymbolicTensor dyy = multiply(multiply(g[0], dy), subtract(ones_like(y), scale(y, 2.0)));
         return {sigmoid_grad(g[0], y), dyy};
       }});
  // tanh_grad(dy, y) = dy (1 - y^2); d/dy = -2 dy y.
  register_op({.name = op_names::tanh_grad, .shape = grad_of_y_shape, .grad = [](Node& node, const Grads& g) -> Grads {
                 const SymbolicTensor &dy = node.inputs()[0], &y = node.inputs()[1];
                 return {tanh_grad(g[0], y), scale(multiply(multiply(g[0], dy), y), -2.0)};
               }});

  // ---- softmax ----
  register_op({.name = op_names::softmax, .shape = softmax_shape, .grad = [](Node& node, const Grads& dy) -> Grads {
                 return {softmax_grad(dy[0], node.output(0), axis_attr(node))};
               }});
  register_op({.name = op_names::log_softmax, .shape = softmax_shape, .grad = [](Node& node, const Grads& dy) -> Grads {
                 return {log_softmax_grad(dy[0], node.output(0), axis_attr(node))};
               }});
  // softmax_grad(dy, y) = y (dy - sum(dy y)). It is symmetric in (dy, g), so d/d(dy) is
  // softmax_grad(g, y); d/dy = g (dy - sum(dy y)) - dy sum(g y).
  register_op(
      {.name = op_names::softmax_grad, .shape = softmax_grad_shape, .grad = [](Node& node, const Grads& g) -> Grads {
         const SymbolicTensor &dy = node.inputs()[0], &y = node.inputs()[1];
         int axis = axis_attr(node);
         Ints axes{static_cast<std::int64_t>(axis)};
         SymbolicTensor s = reduce_sum(multiply(dy, y), axes, true);
         SymbolicTensor t = reduce_sum(multiply(g[0], y), axes, true);
         SymbolicTensor d_y = subtract(multiply(g[0], subtract(dy, s)), multiply(dy, t));
         return {softmax_grad(g[0], y, axis), d_y};
       }});
  // log_softmax_grad(dy, y) = dy - e^y sum(dy); d/d(dy) = g - sum(g e^y); d/dy = -g e^y sum(dy).
  register_op({.name = op_names::log_softmax_grad,
               .shape = softmax_grad_shape,
               .grad = [](Node& node, const Grads& g) -> Grads {
                 const SymbolicTensor &dy = node.inputs()[0], &y = node.inputs()[1];
                 Ints axes{static_cast<std::int64_t>(axis_attr(node))};
                 SymbolicTensor g_p = multiply(g[0], exp(y));  // g e^y
                 SymbolicTensor d_dy = subtract(g[0], reduce_sum(g_p, axes, true));
                 SymbolicTensor d_y = negative(multiply(g_p, reduce_sum(dy, axes, true)));
                 return {d_dy, d_y};
               }});
}

}  // namespace tower
