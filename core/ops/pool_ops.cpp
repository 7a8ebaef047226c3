// Pooling ops (NHWC): max_pool2d, avg_pool2d and their gradients. Builders, shape functions and
// gradients side by side; kernels in backends/cpu/pool_kernels.cpp and backends/cuda/pool_ops.cpp.
#include <fmt/ranges.h>

#include "tower/core/op_names.h"
#include "tower/core/op_registry.h"
#include "tower/core/ops.h"
#include "tower/core/ops/register_ops.h"
#include "tower/core/ops/shape_utils.h"

namespace tower {

namespace {

using Specs = std::vector<TensorSpec>;
using Grads = std::vector<SymbolicTensor>;

Attrs pool_attrs(const ops::Pool2DArgs& args) {
  // Keras's default strides (= pool_size) are resolved here so that kernels see both explicitly.
  return {{"pool_size", args.pool_size},
          {"strides", args.strides.empty() ? args.pool_size : args.strides},
          {"padding", args.padding}};
}

ops::Pool2DArgs pool_args(const Attrs& attrs) {
  return {attrs.get_ints("pool_size"), attrs.get_ints("strides"), attrs.get_string("padding")};
}

// ---- pooling ------------------------------------------------------------------------------------

Shape pool_output(const TensorSpec& x, const Attrs& attrs) {
  expect_rank(x, 4, "x (batch, height, width, channels)");
  expect_floating(x, "x");
  auto [ph, pw] = positive_pair(attrs, "pool_size");
  return window_output(x.shape, ph, pw, attrs, "pool window", /*dilated=*/false, x.shape[3]);
}

Specs pool_shape(const Specs& in, const Attrs& attrs) {
  expect_num_inputs(in, 1);
  return {TensorSpec{pool_output(in[0], attrs), in[0].dtype}};
}

void expect_pool_dy(const TensorSpec& dy, const TensorSpec& x, const Attrs& attrs, const char* what) {
  expect_same_dtype(dy, x, what, "x");
  Shape expected = pool_output(x, attrs);
  if (!dy.shape.compatible_with(expected))
    raise<ShapeError>("{} has shape {} but pooling x {} gives {}", what, dy.shape.to_string(), x.shape.to_string(),
                      expected.to_string());
}

Specs max_pool2d_grad_shape(const Specs& in, const Attrs& attrs) {  // (dy, x, y)
  expect_num_inputs(in, 3);
  expect_pool_dy(in[0], in[1], attrs, "dy");
  expect_pool_dy(in[2], in[1], attrs, "y");
  return {in[1]};
}

Specs avg_pool2d_grad_shape(const Specs& in, const Attrs& attrs) {  // (dy, x)
  expect_num_inputs(in, 2);
  expect_pool_dy(in[0], in[1], attrs, "dy");
  return {in[1]};
}

}  // namespace

namespace ops {

SymbolicTensor max_pool2d(const SymbolicTensor& x, const Pool2DArgs& args) {
  return x.graph().add1(op_names::max_pool2d, {x}, pool_attrs(args));
}

SymbolicTensor avg_pool2d(const SymbolicTensor& x, const Pool2DArgs& args) {
  return x.graph().add1(op_names::avg_pool2d, {x}, pool_attrs(args));
}

SymbolicTensor max_pool2d_grad(const SymbolicTensor& dy, const SymbolicTensor& x, const SymbolicTensor& y,
                               const Pool2DArgs& args) {
  return dy.graph().add1(op_names::max_pool2d_grad, {dy, x, y}, pool_attrs(args));
}

SymbolicTensor avg_pool2d_grad(const SymbolicTensor& dy, const SymbolicTensor& x, const Pool2DArgs& args) {
  return dy.graph().add1(op_names::avg_pool2d_grad, {dy, x}, pool_attrs(args));
}

}  // namespace ops

void register_pool_ops() {
  register_op({.name = op_names::max_pool2d, .shape = pool_shape, .grad = [](Node& node, const Grads& g) {
                 return Grads{ops::max_pool2d_grad(g[0], node.inputs()[0], node.output(0), pool_args(node.attrs()))};
               }});
  register_op({.name = op_names::avg_pool2d, .shape = pool_shape, .grad = [](Node& node, const Grads& g) {
                 return Grads{ops::avg_pool2d_grad(g[0], node.inputs()[0], pool_args(node.attrs()))};
               }});
  register_op({.name = op_names::max_pool2d_grad, .shape = max_pool2d_grad_shape});
  // avg_pool2d_grad is linear in dy: its gradient is avg_pool2d again.
  register_op(
      {.name = op_names::avg_pool2d_grad, .shape = avg_pool2d_grad_shape, .grad = [](Node& node, const Grads& g) {
         return Grads{ops::avg_pool2d(g[0], pool_args(node.attrs())), SymbolicTensor{}};
       }});
}

}  // namespace tower
