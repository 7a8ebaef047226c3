// Pooling ops (NHWC): max_pool2d (with its argmax too), avg_pool2d and their gradients. Builders, shape functions and
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

// Positions in a window that an argmax (uint8, 255 meaning none) can name.
constexpr std::int64_t kMaxArgmaxWindow = 255;

Specs max_pool2d_with_argmax_shape(const Specs& in, const Attrs& attrs) {  // (x) -> (y, argmax)
  expect_num_inputs(in, 1);
  auto [ph, pw] = positive_pair(attrs, "pool_size");
  if (ph * pw > kMaxArgmaxWindow)
    raise<ValueError>("max_pool2d_with_argmax: a {}x{} window has more than {} positions; use max_pool2d", ph, pw,
                      kMaxArgmaxWindow);
  const Shape y = pool_output(in[0], attrs);
  return {TensorSpec{y, in[0].dtype}, TensorSpec{y, DType::uint8}};
}

// (dy, argmax) -> dx: (batch, input_hw, c).
Specs max_pool2d_with_argmax_grad_shape(const Specs& in, const Attrs& attrs) {
  expect_num_inputs(in, 2);
  expect_rank(in[0], 4, "dy (batch, out_h, out_w, channels)");
  expect_floating(in[0], "dy");
  if (in[1].dtype != DType::uint8 || !in[1].shape.compatible_with(in[0].shape))
    raise<ShapeError>("argmax must be uint8 with dy's shape {}, got {}", in[0].shape.to_string(), in[1].to_string());
  const auto& hw = attrs.get_ints("input_hw");
  if (hw.size() != 2 || hw[0] < 1 || hw[1] < 1)
    raise<ValueError>("max_pool2d_with_argmax_grad: input_hw must be x's known (height, width), got {}", hw);
  const TensorSpec x{Shape{in[0].shape[0], hw[0], hw[1], in[0].shape[3]}, in[0].dtype};
  expect_pool_dy(in[0], x, attrs, "dy");
  return {x};
}

}  // namespace

namespace ops {

SymbolicTensor max_pool2d(const SymbolicTensor& x, const Pool2DArgs& args) {
  // With the argmax where its gradient can use it: x's size known (the gradient's output shape) and
  // windows an uint8 can index. Malformed args go to max_pool2d's checks.
  const Shape& s = x.shape();
  const auto& p = args.pool_size;
  if (s.rank() == 4 && s[1] > 0 && s[2] > 0 && p.size() == 2 && p[0] > 0 && p[1] > 0 &&
      p[0] * p[1] <= kMaxArgmaxWindow)
    return max_pool2d_with_argmax(x, args)[0];
  return x.graph().add1(op_names::max_pool2d, {x}, pool_attrs(args));
}

std::vector<SymbolicTensor> max_pool2d_with_argmax(const SymbolicTensor& x, const Pool2DArgs& args) {
  return x.graph().add(op_names::max_pool2d_with_argmax, {x}, pool_attrs(args));
}

SymbolicTensor max_pool2d_with_argmax_grad(const SymbolicTensor& dy, const SymbolicTensor& argmax, const Ints& input_hw,
                                           const Pool2DArgs& args) {
  return dy.graph().add1(op_names::max_pool2d_with_argmax_grad, {dy, argmax},
                         pool_attrs(args).set("input_hw", input_hw));
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
  register_op({.name = op_names::max_pool2d_with_argmax,
               .shape = max_pool2d_with_argmax_shape,
               .grad = [](Node& node, const Grads& g) {
                 if (!g[0].defined()) return Grads(1);  // the argmax has none
                 const Shape& x = node.inputs()[0].shape();
                 return Grads{ops::max_pool2d_with_argmax_grad(g[0], node.output(1), {x[1], x[2]},
                                                               pool_args(node.attrs()))};
               }});
  register_op({.name = op_names::max_pool2d_with_argmax_grad, .shape = max_pool2d_with_argmax_grad_shape});
  // avg_pool2d_grad is linear in dy: its gradient is avg_pool2d again.
  register_op(
      {.name = op_names::avg_pool2d_grad, .shape = avg_pool2d_grad_shape, .grad = [](Node& node, const Grads& g) {
         return Grads{ops::avg_pool2d(g[0], pool_args(node.attrs())), SymbolicTensor{}};
       }});
}

}  // namespace tower
