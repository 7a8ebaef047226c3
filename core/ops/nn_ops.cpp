// NN ops (NHWC): conv2d and its two backward ops, max/avg pooling, batch normalization, dropout.
// Builders, shape functions and gradients side by side; kernels live in backends/*/.
#include <fmt/ranges.h>

#include <tuple>

#include "tower/core/op_registry.h"
#include "tower/core/ops.h"
#include "tower/core/window.h"
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

Attrs pool_attrs(const ops::Pool2DArgs& args) {
  // Keras's default strides (= pool_size) are resolved here so that kernels see both explicitly.
  return {{"pool_size", args.pool_size},
          {"strides", args.strides.empty() ? args.pool_size : args.strides},
          {"padding", args.padding}};
}

ops::Pool2DArgs pool_args(const Attrs& attrs) {
  return {attrs.get_ints("pool_size"), attrs.get_ints("strides"), attrs.get_string("padding")};
}

// A pair of positive integers (strides, dilation_rate, pool_size); ValueError otherwise.
std::pair<std::int64_t, std::int64_t> positive_pair(const Attrs& attrs, const char* key) {
  const auto& v = attrs.get_ints(key);
  if (v.size() != 2 || v[0] < 1 || v[1] < 1)
    raise<ValueError>("{} must be two positive integers, got [{}]", key, fmt::join(v, ", "));
  return {v[0], v[1]};
}

bool is_same_padding(const Attrs& attrs) {
  const auto& padding = attrs.get_string("padding");
  if (padding == "same") return true;
  if (padding == "valid") return false;
  raise<ValueError>("padding must be \"same\" or \"valid\", got \"{}\"", padding);
}

// Output length of one spatial axis (-1 when the input length is unknown). With "valid" padding a
// window (k taps, dilation d) longer than the input has no position: ShapeError naming the fix.
std::int64_t window_out(std::int64_t in, std::int64_t k, std::int64_t stride, std::int64_t dilation, bool same,
                        const char* what, const char* axis) {
  const auto padding = same ? window::Padding::same : window::Padding::valid;
  const std::int64_t out = window::output_length(in, k, stride, dilation, padding);
  const std::int64_t span = window::span(k, dilation);
  if (out == 0)
    raise<ShapeError>(
        "the {} spans {} along the {} (size {}, dilation {}) but the input {} is only {} with "
        "padding \"valid\"; use padding \"same\", a smaller {} or a larger input",
        what, span, axis, k, dilation, axis, in, what);
  return out;
}

// (batch, out_h, out_w) of a 2-D window op on x (batch, h, w, c).
Shape window_output(const Shape& x, std::int64_t kh, std::int64_t kw, const Attrs& attrs, const char* what,
                    bool dilated, std::int64_t channels) {
  auto [sh, sw] = positive_pair(attrs, "strides");
  std::int64_t dh = 1, dw = 1;
  if (dilated) std::tie(dh, dw) = positive_pair(attrs, "dilation_rate");
  const bool same = is_same_padding(attrs);
  return Shape{x[0], window_out(x[1], kh, sh, dh, same, what, "height"),
               window_out(x[2], kw, sw, dw, same, what, "width"), channels};
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
    SymbolicTensor extra =
        x.graph().add1("batch_norm_stats_grad", {or_zeros(g[1]), or_zeros(g[2]), or_zeros(g[3]), x, mean, inv_std});
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
  auto r = node.graph().add("batch_norm_inference_grad", {g[0], in[0], in[1], in[3], in[4]},
                            {{"epsilon", node.attrs().get_float("epsilon")}});
  return {r[0], r[1], r[2], r[3], r[4]};
}

// ---- dropout ------------------------------------------------------------------------------------------

Specs dropout_shape(const Specs& in, const Attrs& attrs) {
  if (in.size() != 1 && in.size() != 2)
    raise<ValueError>("dropout takes x and an optional row offset, got {} inputs", in.size());
  expect_floating(in[0], "x");
  if (in.size() == 2 && (in[1].dtype != DType::int64 || in[1].shape.rank() != 0))
    raise<ValueError>("dropout: the row offset must be an int64 scalar, got {}", in[1].to_string());
  double rate = attrs.get_float("rate");
  if (!(rate >= 0.0 && rate < 1.0))
    raise<ValueError>("rate must be in [0, 1), got {}; it is the fraction of inputs to drop", rate);
  attrs.get_int("seed");
  return {in[0], in[0]};
}

Grads dropout_grad(Node& node, const Grads& g) {
  Grads out(node.inputs().size());  // the row offset has none
  if (g[0].defined()) out[0] = ops::multiply(g[0], node.output(1));  // the mask holds 0 or 1 / (1 - rate)
  return out;
}

}  // namespace

namespace ops {

SymbolicTensor conv2d(const SymbolicTensor& x, const SymbolicTensor& kernel, const Conv2DArgs& args) {
  return x.graph().add1("conv2d", {x, kernel}, conv_attrs(args));
}

SymbolicTensor conv2d_backward_data(const SymbolicTensor& dy, const SymbolicTensor& kernel, const SymbolicTensor& x,
                                    const Conv2DArgs& args) {
  return dy.graph().add1("conv2d_backward_data", {dy, kernel, x}, conv_attrs(args));
}

SymbolicTensor conv2d_backward_filter(const SymbolicTensor& x, const SymbolicTensor& dy, const SymbolicTensor& kernel,
                                      const Conv2DArgs& args) {
  return x.graph().add1("conv2d_backward_filter", {x, dy, kernel}, conv_attrs(args));
}

SymbolicTensor max_pool2d(const SymbolicTensor& x, const Pool2DArgs& args) {
  return x.graph().add1("max_pool2d", {x}, pool_attrs(args));
}

SymbolicTensor avg_pool2d(const SymbolicTensor& x, const Pool2DArgs& args) {
  return x.graph().add1("avg_pool2d", {x}, pool_attrs(args));
}

SymbolicTensor max_pool2d_grad(const SymbolicTensor& dy, const SymbolicTensor& x, const SymbolicTensor& y,
                               const Pool2DArgs& args) {
  return dy.graph().add1("max_pool2d_grad", {dy, x, y}, pool_attrs(args));
}

SymbolicTensor avg_pool2d_grad(const SymbolicTensor& dy, const SymbolicTensor& x, const Pool2DArgs& args) {
  return dy.graph().add1("avg_pool2d_grad", {dy, x}, pool_attrs(args));
}

std::vector<SymbolicTensor> batch_norm_training(const SymbolicTensor& x, const SymbolicTensor& gamma,
                                                const SymbolicTensor& beta, double epsilon) {
  return x.graph().add("batch_norm_training", {x, gamma, beta}, {{"epsilon", epsilon}});
}

std::vector<SymbolicTensor> batch_norm_training_grad(const SymbolicTensor& dy, const SymbolicTensor& x,
                                                     const SymbolicTensor& gamma, const SymbolicTensor& mean,
                                                     const SymbolicTensor& inv_std) {
  return dy.graph().add("batch_norm_training_grad", {dy, x, gamma, mean, inv_std});
}

SymbolicTensor batch_norm_inference(const SymbolicTensor& x, const SymbolicTensor& gamma, const SymbolicTensor& beta,
                                    const SymbolicTensor& mean, const SymbolicTensor& variance, double epsilon) {
  return x.graph().add1("batch_norm_inference", {x, gamma, beta, mean, variance}, {{"epsilon", epsilon}});
}

std::vector<SymbolicTensor> dropout(const SymbolicTensor& x, double rate, std::uint64_t seed,
                                    const SymbolicTensor& row_offset) {
  // The attr stores the seed's 64 bits; kernels read them back as uint64.
  std::vector<SymbolicTensor> inputs{x};
  if (row_offset.defined()) inputs.push_back(row_offset);
  return x.graph().add("dropout", inputs, {{"rate", rate}, {"seed", static_cast<std::int64_t>(seed)}});
}

}  // namespace ops

void register_nn_ops() {
  register_op({.name = "conv2d", .shape = conv2d_shape, .grad = conv2d_grad});
  register_op({.name = "conv2d_backward_data", .shape = conv2d_backward_data_shape, .grad = conv2d_backward_data_grad});
  register_op(
      {.name = "conv2d_backward_filter", .shape = conv2d_backward_filter_shape, .grad = conv2d_backward_filter_grad});

  register_op({.name = "max_pool2d", .shape = pool_shape, .grad = [](Node& node, const Grads& g) {
                 return Grads{ops::max_pool2d_grad(g[0], node.inputs()[0], node.output(0), pool_args(node.attrs()))};
               }});
  register_op({.name = "avg_pool2d", .shape = pool_shape, .grad = [](Node& node, const Grads& g) {
                 return Grads{ops::avg_pool2d_grad(g[0], node.inputs()[0], pool_args(node.attrs()))};
               }});
  register_op({.name = "max_pool2d_grad", .shape = max_pool2d_grad_shape});
  // avg_pool2d_grad is linear in dy: its gradient is avg_pool2d again.
  register_op({.name = "avg_pool2d_grad", .shape = avg_pool2d_grad_shape, .grad = [](Node& node, const Grads& g) {
                 return Grads{ops::avg_pool2d(g[0], pool_args(node.attrs())), SymbolicTensor{}};
               }});

  register_op({.name = "batch_norm_training", .shape = batch_norm_training_shape, .grad = batch_norm_training_grad_fn});
  register_op({.name = "batch_norm_training_grad", .shape = batch_norm_training_grad_shape});
  register_op({.name = "batch_norm_stats_grad", .shape = batch_norm_stats_grad_shape});
  register_op(
      {.name = "batch_norm_inference", .shape = batch_norm_inference_shape, .grad = batch_norm_inference_grad_fn});
  register_op({.name = "batch_norm_inference_grad", .shape = batch_norm_inference_grad_shape});

  register_op({.name = "dropout", .shape = dropout_shape, .grad = dropout_grad});
}

}  // namespace tower
