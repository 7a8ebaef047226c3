// 3-D convolution and pooling ops (NDHWC): conv3d (grouped too), its two backward ops, conv3d_transpose,
// max_pool3d, avg_pool3d and their gradients. Builders, shape functions and gradients side by side;
// kernels in backends/cpu/conv3d_kernels.cpp, backends/cpu/pool3d_kernels.cpp and backends/cuda/conv3d_ops.cpp,
// backends/cuda/pool3d_ops.cpp.
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
using ops::Ints;

constexpr const char* kAxes[3] = {"depth", "height", "width"};

// Three positive integers (strides, dilation_rate, pool_size); ValueError otherwise.
Ints positive_triple(const Attrs& attrs, const char* key) {
  const auto& v = attrs.get_ints(key);
  if (v.size() != 3 || v[0] < 1 || v[1] < 1 || v[2] < 1)
    raise<ValueError>("{} must be three positive integers, got [{}]", key, fmt::join(v, ", "));
  return v;
}

// (batch, out_d, out_h, out_w, channels) of a 3-D window op on x (batch, d, h, w, c) with window k.
Shape window_output3(const Shape& x, const Ints& k, const Attrs& attrs, const char* what, bool dilated,
                     std::int64_t channels) {
  const Ints strides = positive_triple(attrs, "strides");
  const Ints dilation = dilated ? positive_triple(attrs, "dilation_rate") : Ints{1, 1, 1};
  const bool same = is_same_padding(attrs);
  Shape y{x[0], -1, -1, -1, channels};
  for (int a = 0; a < 3; ++a) y[a + 1] = window_out(x[a + 1], k[a], strides[a], dilation[a], same, what, kAxes[a]);
  return y;
}

// ---- conv3d -------------------------------------------------------------------------------------

Attrs conv3d_attrs(const ops::Conv3DArgs& args) {
  if (args.groups < 1) raise<ValueError>("conv3d: groups must be at least 1, got {}", args.groups);
  return {{"strides", args.strides},
          {"padding", args.padding},
          {"dilation_rate", args.dilation_rate},
          {"groups", args.groups}};
}

ops::Conv3DArgs conv3d_args(const Attrs& attrs) {
  return {attrs.get_ints("strides"), attrs.get_string("padding"), attrs.get_ints("dilation_rate"),
          attrs.get_int("groups", 1)};
}

void expect_kernel(const TensorSpec& x, const TensorSpec& kernel, const char* layout) {
  expect_rank(x, 5, "x (batch, depth, height, width, channels)");
  expect_rank(kernel, 5, layout);
  expect_floating(x, "x");
  expect_same_dtype(x, kernel, "x", "kernel");
  const Shape& k = kernel.shape;
  if (k[0] < 1 || k[1] < 1 || k[2] < 1 || k[3] < 0 || k[4] < 0)
    raise<ShapeError>("kernel shape {} must be fully known with a nonzero window", k.to_string());
}

// The output shape of conv3d(x, kernel); checks ranks, dtypes, channels and groups.
Shape conv3d_output(const TensorSpec& x, const TensorSpec& kernel, const Attrs& attrs) {
  expect_kernel(x, kernel, "kernel (kernel_d, kernel_h, kernel_w, in_channels / groups, filters)");
  const Shape& k = kernel.shape;
  const std::int64_t groups = attrs.get_int("groups", 1);
  if (groups < 1) raise<ValueError>("conv3d: groups must be at least 1, got {}", groups);
  if (k[4] % groups != 0)
    raise<ShapeError>("conv3d with {} groups: the kernel {} has {} filters, not a multiple of the groups", groups,
                      k.to_string(), k[4]);
  if (!dims_match(x.shape[4], k[3] * groups))
    raise<ShapeError>(
        "x has {} channels but the kernel {} with {} group(s) expects {} (kernel is (kernel_d, kernel_h, kernel_w, "
        "in_channels / groups, filters))",
        x.shape[4], k.to_string(), groups, k[3] * groups);
  return window_output3(x.shape, {k[0], k[1], k[2]}, attrs, "kernel", /*dilated=*/true, k[4]);
}

Specs conv3d_shape(const Specs& in, const Attrs& attrs) {
  expect_num_inputs(in, 2);
  return {TensorSpec{conv3d_output(in[0], in[1], attrs), in[0].dtype}};
}

// dy must have the shape conv3d(x, kernel) produces.
void expect_conv3d_dy(const TensorSpec& dy, const TensorSpec& x, const TensorSpec& kernel, const Attrs& attrs) {
  expect_same_dtype(dy, x, "dy", "x");
  Shape expected = conv3d_output(x, kernel, attrs);
  if (!dy.shape.compatible_with(expected))
    raise<ShapeError>("dy has shape {} but conv3d of x {} with kernel {} gives {}", dy.shape.to_string(),
                      x.shape.to_string(), kernel.shape.to_string(), expected.to_string());
}

Specs conv3d_backward_data_shape(const Specs& in, const Attrs& attrs) {  // (dy, kernel, x)
  expect_num_inputs(in, 3);
  expect_conv3d_dy(in[0], in[2], in[1], attrs);
  return {in[2]};
}

Specs conv3d_backward_filter_shape(const Specs& in, const Attrs& attrs) {  // (x, dy, kernel)
  expect_num_inputs(in, 3);
  expect_conv3d_dy(in[1], in[0], in[2], attrs);
  return {in[2]};
}

Grads conv3d_grad(Node& node, const Grads& g) {
  auto args = conv3d_args(node.attrs());
  const auto& x = node.inputs()[0];
  const auto& kernel = node.inputs()[1];
  return {ops::conv3d_backward_data(g[0], kernel, x, args), ops::conv3d_backward_filter(x, g[0], kernel, args)};
}

// Both backward ops are linear in each argument, so their gradients are the other two conv ops.
Grads conv3d_backward_data_grad(Node& node, const Grads& g) {  // (dy, kernel, x)
  auto args = conv3d_args(node.attrs());
  const auto& dy = node.inputs()[0];
  const auto& kernel = node.inputs()[1];
  return {ops::conv3d(g[0], kernel, args), ops::conv3d_backward_filter(g[0], dy, kernel, args), SymbolicTensor{}};
}

Grads conv3d_backward_filter_grad(Node& node, const Grads& g) {  // (x, dy, kernel)
  auto args = conv3d_args(node.attrs());
  const auto& x = node.inputs()[0];
  const auto& dy = node.inputs()[1];
  return {ops::conv3d_backward_data(dy, g[0], x, args), ops::conv3d(x, g[0], args), SymbolicTensor{}};
}

// ---- conv3d_transpose -----------------------------------------------------------------------------

// x (batch, d, h, w, in_channels), kernel (kd, kh, kw, filters, in_channels) -> (batch, out_d, out_h, out_w,
// filters).
Specs conv3d_transpose_shape(const Specs& in, const Attrs& attrs) {
  expect_num_inputs(in, 2);
  const TensorSpec& x = in[0];
  const TensorSpec& kernel = in[1];
  expect_kernel(x, kernel, "kernel (kernel_d, kernel_h, kernel_w, filters, in_channels)");
  const Shape& k = kernel.shape;
  if (!dims_match(x.shape[4], k[4]))
    raise<ShapeError>("x has {} channels but the kernel {} expects {} (a transposed convolution's kernel is "
                      "(kernel_d, kernel_h, kernel_w, filters, in_channels))",
                      x.shape[4], k.to_string(), k[4]);
  if (attrs.get_int("groups", 1) != 1) raise<ValueError>("conv3d_transpose takes no groups");
  const Ints strides = positive_triple(attrs, "strides");
  const Ints dilation = positive_triple(attrs, "dilation_rate");
  const auto& output_padding = attrs.get_ints("output_padding");  // empty: None
  if (!output_padding.empty() && output_padding.size() != 3)
    raise<ValueError>("conv3d_transpose: output_padding takes 3 values, got [{}]", fmt::join(output_padding, ", "));
  const bool same = is_same_padding(attrs);
  Shape y{x.shape[0], -1, -1, -1, k[3]};
  for (int a = 0; a < 3; ++a) {
    const std::int64_t op = output_padding.empty() ? -1 : output_padding[a];
    if (!output_padding.empty() && (op < 0 || op >= std::max(strides[a], dilation[a])))
      raise<ValueError>("conv3d_transpose: output_padding {} must be in [0, max(stride {}, dilation {}))", op,
                        strides[a], dilation[a]);
    y[a + 1] = transpose_length(x.shape[a + 1], k[a], strides[a], dilation[a], same, op);
    if (x.shape[a + 1] >= 0 && y[a + 1] < 1)
      raise<ShapeError>("conv3d_transpose of x {} with kernel {}: the output would be empty", x.shape.to_string(),
                        k.to_string());
  }
  // The output is what the convolution's data gradient produces: its convolution gives x's size back.
  const TensorSpec out{y, x.dtype};
  const TensorSpec conv_kernel{k, x.dtype};
  if (!conv3d_output(out, conv_kernel, attrs)
           .compatible_with(Shape{x.shape[0], x.shape[1], x.shape[2], x.shape[3], k[4]}))
    raise<ShapeError>("conv3d_transpose of x {} to {}: convolving that back does not give x's size, so no "
                      "convolution has this transpose; change output_padding, the kernel or the padding",
                      x.shape.to_string(), y.to_string());
  return {out};
}

// The transposed convolution is conv3d_backward_data with x in dy's place.
Grads conv3d_transpose_grad(Node& node, const Grads& g) {
  Grads grads = conv3d_backward_data_grad(node, g);
  grads.pop_back();
  return grads;
}

// ---- pooling ------------------------------------------------------------------------------------

Attrs pool3d_attrs(const ops::Pool3DArgs& args) {
  // Keras's default strides (= pool_size) are resolved here so that kernels see both explicitly.
  return {{"pool_size", args.pool_size},
          {"strides", args.strides.empty() ? args.pool_size : args.strides},
          {"padding", args.padding}};
}

ops::Pool3DArgs pool3d_args(const Attrs& attrs) {
  return {attrs.get_ints("pool_size"), attrs.get_ints("strides"), attrs.get_string("padding")};
}

Shape pool3d_output(const TensorSpec& x, const Attrs& attrs) {
  expect_rank(x, 5, "x (batch, depth, height, width, channels)");
  expect_floating(x, "x");
  return window_output3(x.shape, positive_triple(attrs, "pool_size"), attrs, "pool window", /*dilated=*/false,
                        x.shape[4]);
}

Specs pool3d_shape(const Specs& in, const Attrs& attrs) {
  expect_num_inputs(in, 1);
  return {TensorSpec{pool3d_output(in[0], attrs), in[0].dtype}};
}

void expect_pool3d_dy(const TensorSpec& dy, const TensorSpec& x, const Attrs& attrs, const char* what) {
  expect_same_dtype(dy, x, what, "x");
  Shape expected = pool3d_output(x, attrs);
  if (!dy.shape.compatible_with(expected))
    raise<ShapeError>("{} has shape {} but pooling x {} gives {}", what, dy.shape.to_string(), x.shape.to_string(),
                      expected.to_string());
}

Specs max_pool3d_grad_shape(const Specs& in, const Attrs& attrs) {  // (dy, x, y)
  expect_num_inputs(in, 3);
  expect_pool3d_dy(in[0], in[1], attrs, "dy");
  expect_pool3d_dy(in[2], in[1], attrs, "y");
  return {in[1]};
}

Specs avg_pool3d_grad_shape(const Specs& in, const Attrs& attrs) {  // (dy, x)
  expect_num_inputs(in, 2);
  expect_pool3d_dy(in[0], in[1], attrs, "dy");
  return {in[1]};
}

}  // namespace

namespace ops {

SymbolicTensor conv3d(const SymbolicTensor& x, const SymbolicTensor& kernel, const Conv3DArgs& args) {
  return x.graph().add1(op_names::conv3d, {x, kernel}, conv3d_attrs(args));
}

SymbolicTensor conv3d_backward_data(const SymbolicTensor& dy, const SymbolicTensor& kernel, const SymbolicTensor& x,
                                    const Conv3DArgs& args) {
  return dy.graph().add1(op_names::conv3d_backward_data, {dy, kernel, x}, conv3d_attrs(args));
}

SymbolicTensor conv3d_backward_filter(const SymbolicTensor& x, const SymbolicTensor& dy, const SymbolicTensor& kernel,
                                      const Conv3DArgs& args) {
  return x.graph().add1(op_names::conv3d_backward_filter, {x, dy, kernel}, conv3d_attrs(args));
}

SymbolicTensor conv3d_transpose(const SymbolicTensor& x, const SymbolicTensor& kernel, const Conv3DArgs& args,
                                const Ints& output_padding) {
  Attrs attrs = conv3d_attrs(args);
  attrs.set("output_padding", output_padding);
  return x.graph().add1(op_names::conv3d_transpose, {x, kernel}, attrs);
}

SymbolicTensor max_pool3d(const SymbolicTensor& x, const Pool3DArgs& args) {
  return x.graph().add1(op_names::max_pool3d, {x}, pool3d_attrs(args));
}

SymbolicTensor avg_pool3d(const SymbolicTensor& x, const Pool3DArgs& args) {
  return x.graph().add1(op_names::avg_pool3d, {x}, pool3d_attrs(args));
}

SymbolicTensor max_pool3d_grad(const SymbolicTensor& dy, const SymbolicTensor& x, const SymbolicTensor& y,
                               const Pool3DArgs& args) {
  return dy.graph().add1(op_names::max_pool3d_grad, {dy, x, y}, pool3d_attrs(args));
}

SymbolicTensor avg_pool3d_grad(const SymbolicTensor& dy, const SymbolicTensor& x, const Pool3DArgs& args) {
  return dy.graph().add1(op_names::avg_pool3d_grad, {dy, x}, pool3d_attrs(args));
}

}  // namespace ops

void register_conv3d_ops() {
  register_op({.name = op_names::conv3d, .shape = conv3d_shape, .grad = conv3d_grad});
  register_op(
      {.name = op_names::conv3d_backward_data, .shape = conv3d_backward_data_shape, .grad = conv3d_backward_data_grad});
  register_op({.name = op_names::conv3d_backward_filter,
               .shape = conv3d_backward_filter_shape,
               .grad = conv3d_backward_filter_grad});
  register_op({.name = op_names::conv3d_transpose, .shape = conv3d_transpose_shape, .grad = conv3d_transpose_grad});
  register_op({.name = op_names::max_pool3d, .shape = pool3d_shape, .grad = [](Node& node, const Grads& g) {
                 return Grads{ops::max_pool3d_grad(g[0], node.inputs()[0], node.output(0), pool3d_args(node.attrs()))};
               }});
  register_op({.name = op_names::avg_pool3d, .shape = pool3d_shape, .grad = [](Node& node, const Grads& g) {
                 return Grads{ops::avg_pool3d_grad(g[0], node.inputs()[0], pool3d_args(node.attrs()))};
               }});
  register_op({.name = op_names::max_pool3d_grad, .shape = max_pool3d_grad_shape});
  // avg_pool3d_grad is linear in dy: its gradient is avg_pool3d again.
  register_op(
      {.name = op_names::avg_pool3d_grad, .shape = avg_pool3d_grad_shape, .grad = [](Node& node, const Grads& g) {
         return Grads{ops::avg_pool3d(g[0], pool3d_args(node.attrs())), SymbolicTensor{}};
       }});
}

}  // namespace tower
