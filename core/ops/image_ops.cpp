// Image ops (NHWC): resize (tf.image.resize's bilinear and nearest sampling, core/resize.h) and its
// gradient. Builders, shape functions and gradients; kernels in backends/cpu/image_kernels.cpp and
// backends/cuda/image_{ops.cpp,kernels.cu}.
#include "tower/core/op_names.h"
#include "tower/core/op_registry.h"
#include "tower/core/ops.h"
#include "tower/core/ops/register_ops.h"
#include "tower/core/ops/shape_utils.h"

namespace tower {

namespace {

using Specs = std::vector<TensorSpec>;
using Grads = std::vector<SymbolicTensor>;

void check_interpolation(const Attrs& attrs) {
  const std::string& method = attrs.get_string("interpolation");
  if (method != "bilinear" && method != "nearest")
    raise<ValueError>("resize: interpolation \"{}\" is not supported; tower resizes with \"bilinear\" or \"nearest\"",
                      method);
}

// x (batch, h, w, c) -> (batch, height, width, c).
Specs resize_shape(const Specs& in, const Attrs& attrs) {
  expect_num_inputs(in, 1);
  expect_rank(in[0], 4, "x (batch, height, width, channels)");
  expect_floating(in[0], "x");
  check_interpolation(attrs);
  const std::int64_t height = attrs.get_int("height"), width = attrs.get_int("width");
  if (height < 1 || width < 1) raise<ValueError>("resize: the size ({}, {}) must be positive", height, width);
  const Shape& x = in[0].shape;
  if (x[1] == 0 || x[2] == 0) raise<ShapeError>("resize: x {} has no pixels to sample", x.to_string());
  return {TensorSpec{Shape{x[0], height, width, x[3]}, in[0].dtype}};
}

// (dy (batch, height, width, c), x) -> dx with x's shape (x supplies only its shape).
Specs resize_grad_shape(const Specs& in, const Attrs& attrs) {
  expect_num_inputs(in, 2);
  const Specs forward = resize_shape({in[1]}, attrs);
  expect_same_dtype(in[0], in[1], "dy", "x");
  if (!in[0].shape.compatible_with(forward[0].shape))
    raise<ShapeError>("resize_grad: dy has shape {}, but resizing x {} gives {}", in[0].shape.to_string(),
                      in[1].shape.to_string(), forward[0].shape.to_string());
  return {in[1]};
}

Grads resize_grad_fn(Node& node, const Grads& g) {
  return {node.graph().add1(op_names::resize_grad, {g[0], node.inputs()[0]}, node.attrs())};
}

// resize_grad is linear in dy; its adjoint is resize itself.
Grads resize_grad_grad_fn(Node& node, const Grads& g) {
  return {node.graph().add1(op_names::resize, {g[0]}, node.attrs()), SymbolicTensor{}};
}

}  // namespace

namespace ops {

SymbolicTensor resize(const SymbolicTensor& x, std::int64_t height, std::int64_t width,
                      const std::string& interpolation) {
  return x.graph().add1(op_names::resize, {x}, {{"height", height}, {"width", width}, {"interpolation", interpolation}});
}

}  // namespace ops

void register_image_ops() {
  register_op({.name = op_names::resize, .shape = resize_shape, .grad = resize_grad_fn});
  register_op({.name = op_names::resize_grad, .shape = resize_grad_shape, .grad = resize_grad_grad_fn});
}

}  // namespace tower
