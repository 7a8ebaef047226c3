// Conv2D.
#include "tower/layers/convolutional/conv2d.h"

#include "tower/core/error.h"
#include "tower/core/ops.h"
#include "tower/layers/activations/activations.h"
#include "tower/layers/layer_config.h"
#include "tower/layers/layer_utils.h"

namespace tower::layers {

Conv2D::Conv2D(std::int64_t filters, const std::vector<std::int64_t>& kernel_size, const Conv2DOptions& options)
    : Layer(options.name, "conv2d"), filters_(filters), options_(options) {
  set_data_format(options.data_format);
  set_activity_regularizer(options.activity_regularizer);
  if (filters <= 0) raise<ValueError>("{}: filters must be positive, got {}", describe(*this), filters);
  kernel_size_ = normalize_tuple(*this, "kernel_size", kernel_size, 2);
  normalize_window_2d(*this, options_.strides, options_.padding, options_.dilation_rate);
  if (options.groups < 1 || filters % options.groups != 0)
    raise<ValueError>("{}: groups must be a positive divisor of filters ({}), got {}", describe(*this), filters,
                      options.groups);
  check_activation_name(options.activation);
}

void Conv2D::build(const std::vector<Shape>& input_shapes) {
  const Shape& in = input_shapes.at(0);
  expect_input_rank(*this, in, 4, "(batch, height, width, channels)");
  expect_known_dim(*this, in, -1, "channels");
  if (in.dim(-1) % options_.groups != 0)
    raise<ShapeError>("{}: the input's {} channels do not split into {} groups", describe(*this), in.dim(-1),
                      options_.groups);
  auto kernel = add_weight("kernel", {kernel_size_[0], kernel_size_[1], in.dim(-1) / options_.groups, filters_},
                           options_.kernel_initializer, options_.kernel_regularizer);
  set_constraint(kernel, options_.kernel_constraint);
  if (options_.use_bias)
    set_constraint(add_weight("bias", {filters_}, options_.bias_initializer, options_.bias_regularizer),
                   options_.bias_constraint);
}

std::vector<SymbolicTensor> Conv2D::call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) {
  const SymbolicTensor& x = inputs.at(0);  // (batch, h, w, in)
  expect_input_rank(*this, x.shape(), 4, "(batch, height, width, channels)");
  const VariablePtr kernel = weight("kernel"), bias = weight("bias");  // (kh, kw, in / groups, filters), (filters,)
  const std::int64_t in = kernel->shape()[2] * options_.groups;
  if (x.shape().dim(-1) != in)
    raise<ShapeError>("{}: expected input with {} channels (its last axis), got {}", describe(*this), in,
                      x.shape().to_string());
  const ops::Conv2DArgs args{options_.strides, options_.padding, options_.dilation_rate, options_.groups};
  const SymbolicTensor k = read(ctx, kernel);
  // Under a float16/bfloat16 policy Keras rounds the convolution's output before it adds the bias
  // (the fused op would round once): the two ops, as Keras runs them. (batch, out_h, out_w, filters)
  if (!bias || is_half(k.dtype()))
    return {apply_bias_and_activation(options_.activation, ops::conv2d(x, k, args),
                                      bias ? read(ctx, bias) : SymbolicTensor())};
  // Otherwise one op for the convolution, its bias and a ReLU (added as the output is written on the CPU).
  const bool fuse_relu = options_.activation == "relu";
  auto y = ops::conv2d_bias(x, k, read(ctx, bias), args, fuse_relu ? "relu" : "linear");
  return {apply_activation(fuse_relu ? "" : options_.activation, y)};
}

nlohmann::json Conv2D::get_config() const {
  return layer_config(*this, {{"filters", filters_},
                              {"kernel_size", ints_to_json(kernel_size_)},
                              {"strides", ints_to_json(options_.strides)},
                              {"padding", options_.padding},
                              {"data_format", data_format()},
                              {"dilation_rate", ints_to_json(options_.dilation_rate)},
                              {"groups", options_.groups},
                              {"activation", activation_to_config(options_.activation)},
                              {"use_bias", options_.use_bias},
                              {"kernel_initializer", options_.kernel_initializer.get_config()},
                              {"bias_initializer", options_.bias_initializer.get_config()},
                              {"kernel_regularizer", options_.kernel_regularizer.get_config()},
                              {"bias_regularizer", options_.bias_regularizer.get_config()},
                              {"activity_regularizer", nullptr},
                              {"kernel_constraint", options_.kernel_constraint.get_config()},
                              {"bias_constraint", options_.bias_constraint.get_config()}});
}

LayerPtr Conv2D::from_config(const nlohmann::json& config) {
  nlohmann::json rest = config;
  Constraint kernel_constraint = take_constraint(rest, "kernel_constraint", "Conv2D");
  Constraint bias_constraint = take_constraint(rest, "bias_constraint", "Conv2D");
  ConfigReader r(rest, "Conv2D");
  r.check_common();
  r.expect("lora_rank", nullptr, "LoRA");
  Conv2DOptions options{.strides = r.ints("strides", {1, 1}),
                        .padding = r.padding("padding"),
                        .dilation_rate = r.ints("dilation_rate", {1, 1}),
                        .groups = r.integer("groups", 1),
                        .activation = r.activation("activation"),
                        .use_bias = r.boolean("use_bias", true),
                        .kernel_initializer = r.initializer("kernel_initializer", "glorot_uniform"),
                        .bias_initializer = r.initializer("bias_initializer", "zeros"),
                        .kernel_regularizer = r.regularizer("kernel_regularizer"),
                        .bias_regularizer = r.regularizer("bias_regularizer"),
                        .kernel_constraint = kernel_constraint,
                        .bias_constraint = bias_constraint,
                        .data_format = r.data_format(), .name = r.name()};
  return r.finish(Conv2D(r.integer("filters"), r.ints("kernel_size"), options));
}

}  // namespace tower::layers
