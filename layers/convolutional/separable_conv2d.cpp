// SeparableConv2D.
#include "tower/layers/convolutional/separable_conv2d.h"

#include "tower/core/error.h"
#include "tower/core/ops.h"
#include "tower/layers/activations/activations.h"
#include "tower/layers/layer_config.h"
#include "tower/layers/layer_utils.h"

namespace tower::layers {

SeparableConv2D::SeparableConv2D(std::int64_t filters, const std::vector<std::int64_t>& kernel_size,
                                 const SeparableConv2DOptions& options)
    : Layer(options.name, "separable_conv2d"), filters_(filters), options_(options) {
  set_data_format(options.data_format);
  if (filters <= 0) raise<ValueError>("{}: filters must be positive, got {}", describe(*this), filters);
  kernel_size_ = normalize_tuple(*this, "kernel_size", kernel_size, 2);
  normalize_window_2d(*this, options_.strides, options_.padding, options_.dilation_rate);
  if (options.depth_multiplier < 1)
    raise<ValueError>("{}: depth_multiplier must be positive, got {}", describe(*this), options.depth_multiplier);
  check_activation_name(options.activation);
}

void SeparableConv2D::build(const std::vector<Shape>& input_shapes) {
  const Shape& in = input_shapes.at(0);
  expect_input_rank(*this, in, 4, "(batch, height, width, channels)");
  expect_known_dim(*this, in, -1, "channels");
  const std::int64_t channels = in.dim(-1), m = options_.depth_multiplier;
  set_constraint(add_weight("depthwise_kernel", {kernel_size_[0], kernel_size_[1], channels, m},
                            options_.depthwise_initializer, options_.depthwise_regularizer),
                 options_.depthwise_constraint);
  set_constraint(add_weight("pointwise_kernel", {1, 1, channels * m, filters_}, options_.pointwise_initializer,
                            options_.pointwise_regularizer),
                 options_.pointwise_constraint);
  if (options_.use_bias)
    set_constraint(add_weight("bias", {filters_}, options_.bias_initializer, options_.bias_regularizer),
                   options_.bias_constraint);
}

std::vector<SymbolicTensor> SeparableConv2D::call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) {
  const SymbolicTensor& x = inputs.at(0);  // (batch, h, w, c)
  expect_input_rank(*this, x.shape(), 4, "(batch, height, width, channels)");
  const VariablePtr depthwise = weight("depthwise_kernel");  // (kh, kw, c, m)
  const VariablePtr pointwise = weight("pointwise_kernel");  // (1, 1, c·m, filters)
  const VariablePtr bias = weight("bias");                   // (filters,)
  const std::int64_t channels = depthwise->shape()[2];
  if (x.shape().dim(-1) != channels)
    raise<ShapeError>("{}: expected input with {} channels (its last axis), got {}", describe(*this), channels,
                      x.shape().to_string());
  auto y = ops::depthwise_conv2d(x, read(ctx, depthwise),
                                 {options_.strides, options_.padding, options_.dilation_rate});  // (.., c·m)
  y = ops::conv2d(y, read(ctx, pointwise));                                                    // (.., filters)
  return {apply_bias_and_activation(options_.activation, y, bias ? read(ctx, bias) : SymbolicTensor())};
}

nlohmann::json SeparableConv2D::get_config() const {
  return layer_config(*this, {{"depth_multiplier", options_.depth_multiplier},
                              {"filters", filters_},
                              {"kernel_size", ints_to_json(kernel_size_)},
                              {"strides", ints_to_json(options_.strides)},
                              {"padding", options_.padding},
                              {"data_format", data_format()},
                              {"dilation_rate", ints_to_json(options_.dilation_rate)},
                              {"activation", activation_to_config(options_.activation)},
                              {"use_bias", options_.use_bias},
                              {"depthwise_initializer", options_.depthwise_initializer.get_config()},
                              {"pointwise_initializer", options_.pointwise_initializer.get_config()},
                              {"bias_initializer", options_.bias_initializer.get_config()},
                              {"depthwise_regularizer", options_.depthwise_regularizer.get_config()},
                              {"pointwise_regularizer", options_.pointwise_regularizer.get_config()},
                              {"bias_regularizer", options_.bias_regularizer.get_config()},
                              {"activity_regularizer", nullptr},
                              {"depthwise_constraint", options_.depthwise_constraint.get_config()},
                              {"pointwise_constraint", options_.pointwise_constraint.get_config()},
                              {"bias_constraint", options_.bias_constraint.get_config()}});
}

LayerPtr SeparableConv2D::from_config(const nlohmann::json& config) {
  nlohmann::json rest = config;
  Constraint depthwise_constraint = take_constraint(rest, "depthwise_constraint", "SeparableConv2D");
  Constraint pointwise_constraint = take_constraint(rest, "pointwise_constraint", "SeparableConv2D");
  Constraint bias_constraint = take_constraint(rest, "bias_constraint", "SeparableConv2D");
  ConfigReader r(rest, "SeparableConv2D");
  r.check_common();
  SeparableConv2DOptions options{.strides = r.ints("strides", {1, 1}),
                                 .padding = r.padding("padding"),
                                 .dilation_rate = r.ints("dilation_rate", {1, 1}),
                                 .depth_multiplier = r.integer("depth_multiplier", 1),
                                 .activation = r.activation("activation"),
                                 .use_bias = r.boolean("use_bias", true),
                                 .depthwise_initializer = r.initializer("depthwise_initializer", "glorot_uniform"),
                                 .pointwise_initializer = r.initializer("pointwise_initializer", "glorot_uniform"),
                                 .bias_initializer = r.initializer("bias_initializer", "zeros"),
                                 .depthwise_regularizer = r.regularizer("depthwise_regularizer"),
                                 .pointwise_regularizer = r.regularizer("pointwise_regularizer"),
                                 .bias_regularizer = r.regularizer("bias_regularizer"),
                                 .depthwise_constraint = depthwise_constraint,
                                 .pointwise_constraint = pointwise_constraint,
                                 .bias_constraint = bias_constraint,
                                 .data_format = r.data_format(), .name = r.name()};
  return r.finish(SeparableConv2D(r.integer("filters"), r.ints("kernel_size"), options));
}

}  // namespace tower::layers
