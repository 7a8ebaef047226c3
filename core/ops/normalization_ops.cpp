// Normalization ops: batch normalization in training (batch statistics) and inference (moving
// statistics), layer normalization, and their gradients. Builders, shape functions and gradients side
// by side; kernels in
// backends/cpu/normalization_kernels.cpp and backends/cuda/normalization_ops.cpp.
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

// ---- batch normalization --------------------------------------------------------------------------

// Checks x (..., c) and per-channel vectors (c,); returns c (or -1 when unknown everywhere).
std::int64_t expect_channel_vectors(const Specs& in, std::size_t first, const std::vector<const char*>& names) {
  expect_min_rank(in[0], 2, "x (batch, ..., channels)");
  expect_floating(in[0], "x");
  std::int64_t c = in[0].shape.dim(-1);
  for (std::size_t i = 0; i < names.size(); ++i) {
    const TensorSpec& v = in[first + i];
    expect_rank(v, 1, names[i]);
    expect_same_dtype(in[0], v, "x", names[i]);
    if (!dims_match(c, v.shape[0]))
      raise<ShapeError>("{} has shape {} but x has {} channels (its last axis)", names[i], v.shape.to_string(), c);
    if (c < 0) c = v.shape[0];
  }
  return c;
}

double epsilon_attr(const Attrs& attrs) {
  double eps = attrs.get_float("epsilon");
  if (!(eps >= 0.0)) raise<ValueError>("epsilon must be >= 0, got {}", eps);
  return eps;
}

Specs batch_norm_training_shape(const Specs& in, const Attrs& attrs) {  // (x, gamma, beta)
  expect_num_inputs(in, 3);
  epsilon_attr(attrs);
  std::int64_t c = expect_channel_vectors(in, 1, {"gamma", "beta"});
  TensorSpec stat{Shape{c}, in[0].dtype};
  return {in[0], stat, stat, stat};
}

Specs batch_norm_training_grad_shape(const Specs& in, const Attrs&) {  // (dy, x, gamma, mean, inv_std)
  expect_num_inputs(in, 5);
  expect_same_dtype(in[0], in[1], "dy", "x");
  if (!in[0].shape.compatible_with(in[1].shape))
    raise<ShapeError>("dy {} and x {} must have the same shape", in[0].shape.to_string(), in[1].shape.to_string());
  Specs rest(in.begin() + 1, in.end());
  std::int64_t c = expect_channel_vectors(rest, 1, {"gamma", "mean", "inv_std"});
  TensorSpec vec{Shape{c}, in[1].dtype};
  return {in[1], vec, vec};
}

// Private: the part of dx that flows back through the batch statistics outputs (mean, variance,
// inv_std) of batch_norm_training, when something uses them. (dmean, dvariance, dinv_std, x, mean, inv_std) -> dx.
Specs batch_norm_stats_grad_shape(const Specs& in, const Attrs&) {
  expect_num_inputs(in, 6);
  Specs reordered{in[3], in[0], in[1], in[2], in[4], in[5]};
  expect_channel_vectors(reordered, 1, {"dmean", "dvariance", "dinv_std", "mean", "inv_std"});
  return {in[3]};
}

Grads batch_norm_training_grad_fn(Node& node, const Grads& g) {
  const auto& x = node.inputs()[0];
  const auto& gamma = node.inputs()[1];
  SymbolicTensor mean = node.output(1), inv_std = node.output(3);
  SymbolicTensor dx, dgamma, dbeta;
  if (g[0].defined()) {
    auto r = ops::batch_norm_training_grad(g[0], x, gamma, mean, inv_std);
    dx = r[0], dgamma = r[1], dbeta = r[2];
  }
  if (g[1].defined() || g[2].defined() || g[3].defined()) {
    auto or_zeros = [&](const SymbolicTensor& t) { return t.defined() ? t : ops::zeros_like(mean); };
    SymbolicTensor extra = x.graph().add1(op_names::batch_norm_stats_grad,
                                          {or_zeros(g[1]), or_zeros(g[2]), or_zeros(g[3]), x, mean, inv_std});
    dx = dx.defined() ? ops::add(dx, extra) : extra;
  }
  return {dx, dgamma, dbeta};
}

Specs batch_norm_inference_shape(const Specs& in, const Attrs& attrs) {  // (x, gamma, beta, mean, variance)
  expect_num_inputs(in, 5);
  epsilon_attr(attrs);
  expect_channel_vectors(in, 1, {"gamma", "beta", "mean", "variance"});
  return {in[0]};
}

// Private fused gradient: (dy, x, gamma, mean, variance) -> {dx, dgamma, dbeta, dmean, dvariance}.
Specs batch_norm_inference_grad_shape(const Specs& in, const Attrs& attrs) {
  expect_num_inputs(in, 5);
  epsilon_attr(attrs);
  expect_same_dtype(in[0], in[1], "dy", "x");
  if (!in[0].shape.compatible_with(in[1].shape))
    raise<ShapeError>("dy {} and x {} must have the same shape", in[0].shape.to_string(), in[1].shape.to_string());
  Specs rest(in.begin() + 1, in.end());
  std::int64_t c = expect_channel_vectors(rest, 1, {"gamma", "mean", "variance"});
  TensorSpec vec{Shape{c}, in[1].dtype};
  return {in[1], vec, vec, vec, vec};
}

Grads batch_norm_inference_grad_fn(Node& node, const Grads& g) {
  const auto& in = node.inputs();
  auto r = node.graph().add(op_names::batch_norm_inference_grad, {g[0], in[0], in[1], in[3], in[4]},
                            {{"epsilon", node.attrs().get_float("epsilon")}});
  return {r[0], r[1], r[2], r[3], r[4]};
}

// ---- layer normalization ----------------------------------------------------------------------------

Specs layer_norm_shape(const Specs& in, const Attrs& attrs) {  // (x, gamma, beta)
  expect_num_inputs(in, 3);
  epsilon_attr(attrs);
  expect_channel_vectors(in, 1, {"gamma", "beta"});
  return {in[0]};
}

Specs layer_norm_grad_shape(const Specs& in, const Attrs& attrs) {  // (dy, x, gamma)
  expect_num_inputs(in, 3);
  epsilon_attr(attrs);
  expect_same_dtype(in[0], in[1], "dy", "x");
  if (!in[0].shape.compatible_with(in[1].shape))
    raise<ShapeError>("dy {} and x {} must have the same shape", in[0].shape.to_string(), in[1].shape.to_string());
  Specs rest(in.begin() + 1, in.end());
  std::int64_t n = expect_channel_vectors(rest, 1, {"gamma"});
  TensorSpec vec{Shape{n}, in[1].dtype};
  return {in[1], vec, vec};
}

Grads layer_norm_grad_fn(Node& node, const Grads& g) {
  const auto& in = node.inputs();
  auto r = ops::layer_norm_grad(g[0], in[0], in[1], node.attrs().get_float("epsilon"));
  return {r[0], r[1], r[2]};
}

}  // namespace

namespace ops {

std::vector<SymbolicTensor> batch_norm_training(const SymbolicTensor& x, const SymbolicTensor& gamma,
                                                const SymbolicTensor& beta, double epsilon) {
  return x.graph().add(op_names::batch_norm_training, {x, gamma, beta}, {{"epsilon", epsilon}});
}

std::vector<SymbolicTensor> batch_norm_training_grad(const SymbolicTensor& dy, const SymbolicTensor& x,
                                                     const SymbolicTensor& gamma, const SymbolicTensor& mean,
                                                     const SymbolicTensor& inv_std) {
  return dy.graph().add(op_names::batch_norm_training_grad, {dy, x, gamma, mean, inv_std});
}

SymbolicTensor batch_norm_inference(const SymbolicTensor& x, const SymbolicTensor& gamma, const SymbolicTensor& beta,
                                    const SymbolicTensor& mean, const SymbolicTensor& variance, double epsilon) {
  return x.graph().add1(op_names::batch_norm_inference, {x, gamma, beta, mean, variance}, {{"epsilon", epsilon}});
}

SymbolicTensor layer_norm(const SymbolicTensor& x, const SymbolicTensor& gamma, const SymbolicTensor& beta,
                          double epsilon) {
  return x.graph().add1(op_names::layer_norm, {x, gamma, beta}, {{"epsilon", epsilon}});
}

std::vector<SymbolicTensor> layer_norm_grad(const SymbolicTensor& dy, const SymbolicTensor& x,
                                            const SymbolicTensor& gamma, double epsilon) {
  return dy.graph().add(op_names::layer_norm_grad, {dy, x, gamma}, {{"epsilon", epsilon}});
}

}  // namespace ops

void register_normalization_ops() {
  register_op(
      {.name = op_names::batch_norm_training, .shape = batch_norm_training_shape, .grad = batch_norm_training_grad_fn});
  register_op({.name = op_names::batch_norm_training_grad, .shape = batch_norm_training_grad_shape});
  register_op({.name = op_names::batch_norm_stats_grad, .shape = batch_norm_stats_grad_shape});
  register_op({.name = op_names::batch_norm_inference,
               .shape = batch_norm_inference_shape,
               .grad = batch_norm_inference_grad_fn});
  register_op({.name = op_names::batch_norm_inference_grad, .shape = batch_norm_inference_grad_shape});
  register_op({.name = op_names::layer_norm, .shape = layer_norm_shape, .grad = layer_norm_grad_fn});
  register_op({.name = op_names::layer_norm_grad, .shape = layer_norm_grad_shape});
}

}  // namespace tower
