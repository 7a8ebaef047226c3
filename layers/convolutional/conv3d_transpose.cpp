// Conv3DTranspose.
#include "tower/layers/convolutional/conv3d_transpose.h"

#include "tower/core/error.h"
#include "tower/core/ops.h"
#include "tower/layers/activations/activations.h"
#include "tower/layers/layer_config.h"
#include "tower/layers/layer_utils.h"

namespace tower::layers {

Conv3DTranspose::Conv3DTranspose(std::int64_t filters, const std::vector<std::int64_t>& kernel_size,
                                 const Conv3DTransposeOptions& options)
    : Layer(options.name, "conv3d_transpose"), filters_(filters), options_(options) {
  set_data_format(options.data_format);
  set_activity_regularizer(options.activity_regularizer);
  if (filters <= 0) raise<ValueError>("{}: filters must be positive, got {}", describe(*this), filters);
  kernel_size_ = normalize_tuple(*this, "kernel_size", kernel_size, 3);
  normalize_window_3d(*this, options_.strides, options_.padding, options_.dilation_rate);
  if (!options.output_padding.empty()) {
    options_.output_padding = normalize_tuple(*this, "output_padding", options.output_padding, 3, 0);
    for (int a = 0; a < 3; ++a)
      if (options_.output_padding[a] >= options_.strides[a])
        raise<ValueError>("{}: output_padding ({}, {}, {}) must be smaller than the strides ({}, {}, {}), as in Keras",
                          describe(*this), options_.output_padding[0], options_.output_padding[1],
                          options_.output_padding[2], options_.strides[0], options_.strides[1], options_.strides[2]);
  }
  check_activation_name(options.activation);
}

void Conv3DTranspose::build(const std::vector<Shape>& input_shapes) {
  const Shape& in = input_shapes.at(0);
  expect_input_rank(*this, in, 5, "(batch, depth, height, width, channels)");
  expect_known_dim(*this, in, -1, "channels");
  auto kernel = add_weight("kernel", {kernel_size_[0], kernel_size_[1], kernel_size_[2], filters_, in.dim(-1)},
                           options_.kernel_initializer, options_.kernel_regularizer);
  set_constraint(kernel, options_.kernel_constraint);
  if (options_.use_bias)
    set_constraint(add_weight("bias", {filters_}, options_.bias_initializer, options_.bias_regularizer),
                   options_.bias_constraint);
}

std::vector<SymbolicTensor> Conv3DTranspose::call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) {
  const SymbolicTensor& x = inputs.at(0);  // (batch, d, h, w, in)
  expect_input_rank(*this, x.shape(), 5, "(batch, depth, height, width, channels)");
  const VariablePtr kernel = weight("kernel"), bias = weight("bias");  // (kd, kh, kw, filters, in), (filters,)
  const std::int64_t in = kernel->shape()[4];
  if (x.shape().dim(-1) != in)
    raise<ShapeError>("{}: expected input with {} channels (its last axis), got {}", describe(*this), in,
                      x.shape().to_string());
  auto y = ops::conv3d_transpose(x, read(ctx, kernel), {options_.strides, options_.padding, options_.dilation_rate},
                                 options_.output_padding);  // (batch, out_d, out_h, out_w, filters)
  return {apply_bias_and_activation(options_.activation, y, bias ? read(ctx, bias) : SymbolicTensor())};
}

nlohmann::json Conv3DTranspose::get_config() const {
  return layer_config(
      *this, {{"filters", filters_},
              {"kernel_size", ints_to_json(kernel_size_)},
              {"strides", ints_to_json(options_.strides)},
              {"padding", options_.padding},
              {"output_padding", options_.output_padding.empty() ? nlohmann::json() : ints_to_json(options_.output_padding)},
              {"data_format", data_format()},
              {"dilation_rate", ints_to_json(options_.dilation_rate)},
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

LayerPtr Conv3DTranspose::from_config(const nlohmann::json& config) {
  nlohmann::json rest = config;
  Constraint kernel_constraint = take_constraint(rest, "kernel_constraint", "Conv3DTranspose");
  Constraint bias_constraint = take_constraint(rest, "bias_constraint", "Conv3DTranspose");
  ConfigReader r(rest, "Conv3DTranspose");
  r.check_common();
  r.expect("lora_rank", nullptr, "LoRA");
  Conv3DTransposeOptions options{.strides = r.ints("strides", {1, 1, 1}),
                                 .padding = r.padding("padding"),
                                 .output_padding = r.has("output_padding") ? r.ints("output_padding")
                                                                           : std::vector<std::int64_t>{},
                                 .dilation_rate = r.ints("dilation_rate", {1, 1, 1}),
                                 .activation = r.activation("activation"),
                                 .use_bias = r.boolean("use_bias", true),
                                 .kernel_initializer = r.initializer("kernel_initializer", "glorot_uniform"),
                                 .bias_initializer = r.initializer("bias_initializer", "zeros"),
                                 .kernel_regularizer = r.regularizer("kernel_regularizer"),
                                 .bias_regularizer = r.regularizer("bias_regularizer"),
                                 .kernel_constraint = kernel_constraint,
                                 .bias_constraint = bias_constraint,
                                 .data_format = r.data_format(), .name = r.name()};
  return r.finish(Conv3DTranspose(r.integer("filters"), r.ints("kernel_size"), options));
}

}  // namespace tower::layers
