// Convolution ops (NHWC): conv2d and its two backward ops. Builders, shape functions and gradients
// side by side; kernels in backends/cpu/conv_kernels.cpp and backends/cuda/conv_ops.cpp.
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

Attrs conv_attrs(const ops::Conv2DArgs& args) {
  return {{"strides", args.strides}, {"padding", args.padding}, {"dilation_rate", args.dilation_rate}};
}

ops::Conv2DArgs conv_args(const Attrs& attrs) {
  return {attrs.get_ints("strides"), attrs.get_string("padding"), attrs.get_ints("dilation_rate")};
}

// ---- conv2d -------------------------------------------------------------------------------------

// The output shape of conv2d(x, kernel); checks ranks, dtypes and channels.
Shape conv_output(const TensorSpec& x, const TensorSpec& kernel, const Attrs& attrs) {
  expect_rank(x, 4, "x (batch, height, width, channels)");
  expect_rank(kernel, 4, "kernel (kernel_h, kernel_w, in_channels, filters)");
  expect_floating(x, "x");
  expect_same_dtype(x, kernel, "x", "kernel");
  const Shape& k = kernel.shape;
  if (k[0] < 1 || k[1] < 1 || k[2] < 0 || k[3] < 0)
    raise<ShapeError>("kernel shape {} must be fully known with a nonzero window", k.to_string());
  if (!dims_match(x.shape[3], k[2]))
    raise<ShapeError>(
        "x has {} channels but the kernel {} expects {} (kernel is (kernel_h, kernel_w, "
        "in_channels, filters))",
        x.shape[3], k.to_string(), k[2]);
  return window_output(x.shape, k[0], k[1], attrs, "kernel", /*dilated=*/true, k[3]);
}

Specs conv2d_shape(const Specs& in, const Attrs& attrs) {
  expect_num_inputs(in, 2);
  return {TensorSpec{conv_output(in[0], in[1], attrs), in[0].dtype}};
}

// dy must have the shape conv2d(x, kernel) produces.
void expect_conv_dy(const TensorSpec& dy, const TensorSpec& x, const TensorSpec& kernel, const Attrs& attrs) {
  expect_same_dtype(dy, x, "dy", "x");
  Shape expected = conv_output(x, kernel, attrs);
  if (!dy.shape.compatible_with(expected))
    raise<ShapeError>("dy has shape {} but conv2d of x {} with kernel {} gives {}", dy.shape.to_string(),
                      x.shape.to_string(), kernel.shape.to_string(), expected.to_string());
}

Specs conv2d_backward_data_shape(const Specs& in, const Attrs& attrs) {  // (dy, kernel, x)
  expect_num_inputs(in, 3);
  expect_conv_dy(in[0], in[2], in[1], attrs);
  return {in[2]};
}

Specs conv2d_backward_filter_shape(const Specs& in, const Attrs& attrs) {  // (x, dy, kernel)
  expect_num_inputs(in, 3);
  expect_conv_dy(in[1], in[0], in[2], attrs);
  return {in[2]};
}

Grads conv2d_grad(Node& node, const Grads& g) {
  auto args = conv_args(node.attrs());
  const auto& x = node.inputs()[0];
  const auto& kernel = node.inputs()[1];
  return {ops::conv2d_backward_data(g[0], kernel, x, args), ops::conv2d_backward_filter(x, g[0], kernel, args)};
}

// Both backward ops are linear in each argument, so their gradients are the other two conv ops.
Grads conv2d_backward_data_grad(Node& node, const Grads& g) {  // (dy, kernel, x)
  auto args = conv_args(node.attrs());
  const auto& dy = node.inputs()[0];
  const auto& kernel = node.inputs()[1];
  return {ops::conv2d(g[0], kernel, args), ops::conv2d_backward_filter(g[0], dy, kernel, args), SymbolicTensor{}};
}

Grads conv2d_backward_filter_grad(Node& node, const Grads& g) {  // (x, dy, kernel)
  auto args = conv_args(node.attrs());
  const auto& x = node.inputs()[0];
  const auto& dy = node.inputs()[1];
  return {ops::conv2d_backward_data(dy, g[0], x, args), ops::conv2d(x, g[0], args), SymbolicTensor{}};
}

}  // namespace

namespace ops {

SymbolicTensor conv2d(const SymbolicTensor& x, const SymbolicTensor& kernel, const Conv2DArgs& args) {
  return x.graph().add1(op_names::conv2d, {x, kernel}, conv_attrs(args));
}

SymbolicTensor conv2d_backward_data(const SymbolicTensor& dy, const SymbolicTensor& kernel, const SymbolicTensor& x,
                                    const Conv2DArgs& args) {
  return dy.graph().add1(op_names::conv2d_backward_data, {dy, kernel, x}, conv_attrs(args));
}

SymbolicTensor conv2d_backward_filter(const SymbolicTensor& x, const SymbolicTensor& dy, const SymbolicTensor& kernel,
                                      const Conv2DArgs& args) {
  return x.graph().add1(op_names::conv2d_backward_filter, {x, dy, kernel}, conv_attrs(args));
}

}  // namespace ops

void register_conv_ops() {
  register_op({.name = op_names::conv2d, .shape = conv2d_shape, .grad = conv2d_grad});
  register_op(
      {.name = op_names::conv2d_backward_data, .shape = conv2d_backward_data_shape, .grad = conv2d_backward_data_grad});
  register_op({.name = op_names::conv2d_backward_filter,
               .shape = conv2d_backward_filter_shape,
               .grad = conv2d_backward_filter_grad});
}

}  // namespace tower
