// Convolution ops (NHWC): conv2d (grouped too), conv2d_bias, conv2d's two backward ops and
// conv2d_transpose. Builders, shape functions and gradients side by side; kernels in
// backends/cpu/conv_kernels.cpp and backends/cuda/conv_ops.cpp.
#include <fmt/ranges.h>

#include <algorithm>

#include "tower/core/op_names.h"
#include "tower/core/op_registry.h"
#include "tower/core/ops.h"
#include "tower/core/ops/register_ops.h"
#include "tower/core/ops/shape_utils.h"
#include "tower/core/window.h"

namespace tower {

namespace {

using Specs = std::vector<TensorSpec>;
using Grads = std::vector<SymbolicTensor>;

Attrs conv_attrs(const ops::Conv2DArgs& args) {
  if (args.groups < 1) raise<ValueError>("conv2d: groups must be at least 1, got {}", args.groups);
  return {{"strides", args.strides},
          {"padding", args.padding},
          {"dilation_rate", args.dilation_rate},
          {"groups", args.groups}};
}

ops::Conv2DArgs conv_args(const Attrs& attrs) {
  return {attrs.get_ints("strides"), attrs.get_string("padding"), attrs.get_ints("dilation_rate"),
          attrs.get_int("groups", 1)};
}

// ---- conv2d -------------------------------------------------------------------------------------

// The output shape of conv2d(x, kernel); checks ranks, dtypes, channels and groups.
Shape conv_output(const TensorSpec& x, const TensorSpec& kernel, const Attrs& attrs) {
  expect_rank(x, 4, "x (batch, height, width, channels)");
  expect_rank(kernel, 4, "kernel (kernel_h, kernel_w, in_channels / groups, filters)");
  expect_floating(x, "x");
  expect_same_dtype(x, kernel, "x", "kernel");
  const Shape& k = kernel.shape;
  const std::int64_t groups = attrs.get_int("groups", 1);
  if (k[0] < 1 || k[1] < 1 || k[2] < 0 || k[3] < 0)
    raise<ShapeError>("kernel shape {} must be fully known with a nonzero window", k.to_string());
  if (groups < 1) raise<ValueError>("conv2d: groups must be at least 1, got {}", groups);
  if (k[3] % groups != 0)
    raise<ShapeError>("conv2d with {} groups: the kernel {} has {} filters, not a multiple of the groups", groups,
                      k.to_string(), k[3]);
  if (!dims_match(x.shape[3], k[2] * groups))
    raise<ShapeError>(
        "x has {} channels but the kernel {} with {} group(s) expects {} (kernel is (kernel_h, kernel_w, "
        "in_channels / groups, filters))",
        x.shape[3], k.to_string(), groups, k[2] * groups);
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

// (x, kernel, bias): conv2d's output, and bias as bias_add wants it.
Specs conv2d_bias_shape(const Specs& in, const Attrs& attrs) {
  expect_num_inputs(in, 3);
  const TensorSpec y{conv_output(in[0], in[1], attrs), in[0].dtype};
  expect_rank(in[2], 1, "bias");
  expect_same_dtype(in[0], in[2], "x", "bias");
  if (!dims_match(y.shape.dim(-1), in[2].shape[0]))
    raise<ShapeError>("bias has {} elements but the convolution has {} filters", in[2].shape[0], y.shape.dim(-1));
  return {y};
}

Grads conv2d_grad(Node& node, const Grads& g) {
  auto args = conv_args(node.attrs());
  const auto& x = node.inputs()[0];
  const auto& kernel = node.inputs()[1];
  return {ops::conv2d_backward_data(g[0], kernel, x, args), ops::conv2d_backward_filter(x, g[0], kernel, args)};
}

// As conv2d's, on the gradient through the ReLU; the bias's is bias_add's, from the same pass as the
// ReLU's mask (bias_add_relu_grad).
Grads conv2d_bias_grad(Node& node, const Grads& g) {
  auto args = conv_args(node.attrs());
  const auto& x = node.inputs()[0];
  const auto& kernel = node.inputs()[1];
  const auto dz = node.attrs().get_string("activation") == "relu" ? ops::bias_add_relu_grad(g[0], node.output(0))
                                                                  : Grads{g[0], ops::bias_add_grad(g[0])};
  return {ops::conv2d_backward_data(dz[0], kernel, x, args), ops::conv2d_backward_filter(x, dz[0], kernel, args),
          dz[1]};
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

// ---- conv2d_transpose -----------------------------------------------------------------------------

// x (batch, h, w, in_channels), kernel (kh, kw, filters, in_channels) -> (batch, out_h, out_w, filters).
Specs conv2d_transpose_shape(const Specs& in, const Attrs& attrs) {
  expect_num_inputs(in, 2);
  const TensorSpec& x = in[0];
  const TensorSpec& kernel = in[1];
  expect_rank(x, 4, "x (batch, height, width, channels)");
  expect_rank(kernel, 4, "kernel (kernel_h, kernel_w, filters, in_channels)");
  expect_floating(x, "x");
  expect_same_dtype(x, kernel, "x", "kernel");
  const Shape& k = kernel.shape;
  if (k[0] < 1 || k[1] < 1 || k[2] < 0 || k[3] < 0)
    raise<ShapeError>("kernel shape {} must be fully known with a nonzero window", k.to_string());
  if (!dims_match(x.shape[3], k[3]))
    raise<ShapeError>("x has {} channels but the kernel {} expects {} (a transposed convolution's kernel is "
                      "(kernel_h, kernel_w, filters, in_channels))",
                      x.shape[3], k.to_string(), k[3]);
  if (attrs.get_int("groups", 1) != 1) raise<ValueError>("conv2d_transpose takes no groups");
  const auto& strides = attrs.get_ints("strides");
  const auto& dilation = attrs.get_ints("dilation_rate");
  const auto& output_padding = attrs.get_ints("output_padding");  // empty: None
  if (strides.size() != 2 || dilation.size() != 2 || (!output_padding.empty() && output_padding.size() != 2))
    raise<ValueError>("conv2d_transpose: strides, dilation_rate and output_padding take 2 values each");
  const bool same = is_same_padding(attrs);
  Shape y{x.shape[0], -1, -1, k[2]};
  for (int a = 0; a < 2; ++a) {
    const std::int64_t op = output_padding.empty() ? -1 : output_padding[a];
    if (!output_padding.empty() && (op < 0 || op >= std::max(strides[a], dilation[a])))
      raise<ValueError>("conv2d_transpose: output_padding {} must be in [0, max(stride {}, dilation {}))", op,
                        strides[a], dilation[a]);
    y[a + 1] = transpose_length(x.shape[a + 1], k[a], strides[a], dilation[a], same, op);
    if (x.shape[a + 1] >= 0 && y[a + 1] < 1)
      raise<ShapeError>("conv2d_transpose of x {} with kernel {}: the output would be empty", x.shape.to_string(),
                        k.to_string());
  }
  // The output is what the convolution's data gradient produces: its convolution gives x's size back.
  const TensorSpec out{y, x.dtype};
  const TensorSpec conv_kernel{k, x.dtype};
  if (!conv_output(out, conv_kernel, attrs).compatible_with(Shape{x.shape[0], x.shape[1], x.shape[2], k[3]}))
    raise<ShapeError>("conv2d_transpose of x {} to {}: convolving that back does not give x's size, so no "
                      "convolution has this transpose; change output_padding, the kernel or the padding",
                      x.shape.to_string(), y.to_string());
  return {out};
}

// The transposed convolution is conv2d_backward_data with x in dy's place.
Grads conv2d_transpose_grad(Node& node, const Grads& g) {
  Grads grads = conv2d_backward_data_grad(node, g);
  grads.pop_back();
  return grads;
}

}  // namespace

namespace ops {

SymbolicTensor conv2d(const SymbolicTensor& x, const SymbolicTensor& kernel, const Conv2DArgs& args) {
  return x.graph().add1(op_names::conv2d, {x, kernel}, conv_attrs(args));
}

SymbolicTensor conv2d_bias(const SymbolicTensor& x, const SymbolicTensor& kernel, const SymbolicTensor& bias,
                           const Conv2DArgs& args, const std::string& activation) {
  if (activation != "linear" && activation != "relu")
    raise<ValueError>("conv2d_bias: activation must be \"linear\" or \"relu\", got \"{}\"; apply others after it",
                      activation);
  return x.graph().add1(op_names::conv2d_bias, {x, kernel, bias}, conv_attrs(args).set("activation", activation));
}

SymbolicTensor conv2d_backward_data(const SymbolicTensor& dy, const SymbolicTensor& kernel, const SymbolicTensor& x,
                                    const Conv2DArgs& args) {
  return dy.graph().add1(op_names::conv2d_backward_data, {dy, kernel, x}, conv_attrs(args));
}

SymbolicTensor conv2d_backward_filter(const SymbolicTensor& x, const SymbolicTensor& dy, const SymbolicTensor& kernel,
                                      const Conv2DArgs& args) {
  return x.graph().add1(op_names::conv2d_backward_filter, {x, dy, kernel}, conv_attrs(args));
}

SymbolicTensor depthwise_conv2d(const SymbolicTensor& x, const SymbolicTensor& kernel, Conv2DArgs args) {
  const Shape& k = kernel.shape();
  if (k.rank() != 4 || k[0] < 1 || k[1] < 1 || k[2] < 1 || k[3] < 1)
    raise<ShapeError>("depthwise_conv2d: the kernel must be (kernel_h, kernel_w, channels, depth_multiplier), known, "
                      "got {}",
                      k.to_string());
  if (args.groups != 1) raise<ValueError>("depthwise_conv2d: its groups are the channels; leave args.groups 1");
  args.groups = k[2];
  // (kh, kw, c, m) -> (kh, kw, 1, c·m): filter c·m + j of group c, as Keras orders the outputs.
  return conv2d(x, reshape(kernel, {k[0], k[1], 1, k[2] * k[3]}), args);
}

SymbolicTensor conv2d_transpose(const SymbolicTensor& x, const SymbolicTensor& kernel, const Conv2DArgs& args,
                                const Ints& output_padding) {
  Attrs attrs = conv_attrs(args);
  attrs.set("output_padding", output_padding);
  return x.graph().add1(op_names::conv2d_transpose, {x, kernel}, attrs);
}

}  // namespace ops

void register_conv_ops() {
  register_op({.name = op_names::conv2d, .shape = conv2d_shape, .grad = conv2d_grad});
  register_op({.name = op_names::conv2d_bias, .shape = conv2d_bias_shape, .grad = conv2d_bias_grad});
  register_op(
      {.name = op_names::conv2d_backward_data, .shape = conv2d_backward_data_shape, .grad = conv2d_backward_data_grad});
  register_op({.name = op_names::conv2d_backward_filter,
               .shape = conv2d_backward_filter_shape,
               .grad = conv2d_backward_filter_grad});
  register_op({.name = op_names::conv2d_transpose, .shape = conv2d_transpose_shape, .grad = conv2d_transpose_grad});
}

}  // namespace tower
