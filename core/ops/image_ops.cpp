// Image ops (NHWC): resize (tf.image.resize's bilinear and nearest sampling, core/resize.h) and its
// gradient; image_transform (TF's ImageProjectiveTransformV3, core/image_transform.h) and
// rotation_transform (the matrices RandomRotation feeds it). Builders, shape functions and gradients;
// kernels in backends/cpu/image_kernels.cpp and backends/cuda/image_{ops.cpp,kernels.cu}.
#include <algorithm>
#include <iterator>

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

const char* const kFillModes[] = {"reflect", "wrap", "constant", "nearest"};

// (images (batch, h, w, c), transforms (batch, 8)) -> (batch, output_height, output_width, c).
Specs image_transform_shape(const Specs& in, const Attrs& attrs) {
  expect_num_inputs(in, 2);
  expect_rank(in[0], 4, "images (batch, height, width, channels)");
  expect_floating(in[0], "images");
  expect_rank(in[1], 2, "transforms (batch, 8)");
  expect_same_dtype(in[0], in[1], "images", "transforms");
  const std::string& method = attrs.get_string("interpolation");
  if (method != "bilinear" && method != "nearest")
    raise<ValueError>("image_transform: interpolation \"{}\" is not supported; use \"bilinear\" or \"nearest\"",
                      method);
  const std::string& fill = attrs.get_string("fill_mode");
  if (std::find(std::begin(kFillModes), std::end(kFillModes), fill) == std::end(kFillModes))
    raise<ValueError>("image_transform: fill_mode \"{}\" is not supported; use \"reflect\", \"wrap\", "
                      "\"constant\" or \"nearest\"",
                      fill);
  const std::int64_t height = attrs.get_int("output_height"), width = attrs.get_int("output_width");
  if (height < 1 || width < 1)
    raise<ValueError>("image_transform: the output size ({}, {}) must be positive", height, width);
  const Shape& x = in[0].shape;
  const Shape& t = in[1].shape;
  if (t[1] >= 0 && t[1] != 8)
    raise<ShapeError>("image_transform: transforms {} must have 8 columns (a0..a7 of TF's projective transform)",
                      t.to_string());
  if (x[0] >= 0 && t[0] >= 0 && x[0] != t[0])
    raise<ShapeError>("image_transform: {} transforms for {} images; give one transform per image", t[0], x[0]);
  if (x[1] == 0 || x[2] == 0) raise<ShapeError>("image_transform: images {} have no pixels to sample", x.to_string());
  return {TensorSpec{Shape{x[0], height, width, x[3]}, in[0].dtype}};
}

// Augmentation sits at the input, so image_transform has no gradient: differentiating through it
// (a layer that depends on weights before it) raises rather than silently giving zero.
Grads image_transform_grad_fn(Node& node, const Grads&) {
  raise<ValueError>("{}: image_transform has no gradient; put the random geometric layers (RandomRotation, "
                    "RandomTranslation, RandomZoom, RandomCrop) before any layer with weights",
                    node.describe());
}

// angles (batch, 1) in radians -> (batch, 8).
Specs rotation_transform_shape(const Specs& in, const Attrs& attrs) {
  expect_num_inputs(in, 1);
  expect_rank(in[0], 2, "angles (batch, 1)");
  expect_floating(in[0], "angles");
  if (in[0].shape[1] >= 0 && in[0].shape[1] != 1)
    raise<ShapeError>("rotation_transform: angles {} must have one column", in[0].shape.to_string());
  if (attrs.get_int("height") < 1 || attrs.get_int("width") < 1)
    raise<ValueError>("rotation_transform: the image size ({}, {}) must be positive", attrs.get_int("height"),
                      attrs.get_int("width"));
  return {TensorSpec{Shape{in[0].shape[0], 8}, in[0].dtype}};
}

}  // namespace

namespace ops {

SymbolicTensor image_transform(const SymbolicTensor& images, const SymbolicTensor& transforms,
                               std::int64_t output_height, std::int64_t output_width,
                               const std::string& interpolation, const std::string& fill_mode, double fill_value) {
  return images.graph().add1(op_names::image_transform, {images, transforms},
                             {{"output_height", output_height},
                              {"output_width", output_width},
                              {"interpolation", interpolation},
                              {"fill_mode", fill_mode},
                              {"fill_value", fill_value}});
}

SymbolicTensor rotation_transform(const SymbolicTensor& angles, std::int64_t height, std::int64_t width) {
  return angles.graph().add1(op_names::rotation_transform, {angles}, {{"height", height}, {"width", width}});
}

SymbolicTensor resize(const SymbolicTensor& x, std::int64_t height, std::int64_t width,
                      const std::string& interpolation) {
  return x.graph().add1(op_names::resize, {x}, {{"height", height}, {"width", width}, {"interpolation", interpolation}});
}

}  // namespace ops

void register_image_ops() {
  register_op({.name = op_names::resize, .shape = resize_shape, .grad = resize_grad_fn});
  register_op({.name = op_names::resize_grad, .shape = resize_grad_shape, .grad = resize_grad_grad_fn});
  register_op({.name = op_names::image_transform, .shape = image_transform_shape, .grad = image_transform_grad_fn});
  register_op({.name = op_names::rotation_transform, .shape = rotation_transform_shape});  // no gradient
}

}  // namespace tower
