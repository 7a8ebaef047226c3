// LocallyConnected2D.
#include "tower/layers/locally_connected/locally_connected2d.h"

#include "tower/core/error.h"
#include "tower/core/ops.h"
#include "tower/layers/activations/activations.h"
#include "tower/layers/layer_config.h"
#include "tower/layers/layer_utils.h"
#include "tower/layers/locally_connected/local_conv.h"

namespace tower::layers {

LocallyConnected2D::LocallyConnected2D(std::int64_t filters, const std::vector<std::int64_t>& kernel_size,
                                       const LocallyConnected2DOptions& options)
    : Layer(options.name, "locally_connected2d"), filters_(filters), options_(options) {
  set_data_format(options.data_format);
  set_activity_regularizer(options.activity_regularizer);
  if (filters <= 0) raise<ValueError>("{}: filters must be positive, got {}", describe(*this), filters);
  kernel_size_ = normalize_tuple(*this, "kernel_size", kernel_size, 2);
  options_.strides = normalize_tuple(*this, "strides", options.strides, 2);
  options_.padding = normalize_padding(*this, options.padding);
  if (options_.implementation != 1)
    raise<ValueError>(
        "{}: implementation {} is not supported; tower implements LocallyConnected2D's implementation 1 "
        "(kernel (out_rows * out_cols, kh * kw * in, filters)) only{}",
        describe(*this), options_.implementation,
        options_.implementation == 2 || options_.implementation == 3
            ? "; rebuild the model in Keras with implementation=1 (its weights are the unmasked entries)"
            : "; Keras knows 1, 2 and 3");
  if (options_.padding != "valid")
    raise<ValueError>("{}: padding must be \"valid\" with implementation 1, as in Keras; got \"{}\"",
                      describe(*this), options.padding);
  check_activation_name(options.activation);
}

void LocallyConnected2D::build(const std::vector<Shape>& input_shapes) {
  const Shape& in = input_shapes.at(0);  // (batch, rows, cols, in), channels last
  expect_input_rank(*this, in, 4, "(batch, rows, cols, channels)");
  expect_known_dim(*this, in, 1, "rows");
  expect_known_dim(*this, in, 2, "cols");
  expect_known_dim(*this, in, 3, "channels");
  const std::int64_t oh = local_conv_output_length(in.dim(1), kernel_size_[0], options_.strides[0]);
  const std::int64_t ow = local_conv_output_length(in.dim(2), kernel_size_[1], options_.strides[1]);
  if (oh <= 0 || ow <= 0)
    raise<ShapeError>("{}: input {} is smaller than the kernel ({}, {}); the output would be empty. Use a "
                      "larger input or a smaller kernel_size",
                      describe(*this), in.to_string(), kernel_size_[0], kernel_size_[1]);
  set_constraint(add_weight("kernel", {oh * ow, kernel_size_[0] * kernel_size_[1] * in.dim(3), filters_},
                            options_.kernel_initializer, options_.kernel_regularizer),
                 options_.kernel_constraint);
  if (options_.use_bias)
    set_constraint(add_weight("bias", {oh, ow, filters_}, options_.bias_initializer, options_.bias_regularizer),
                   options_.bias_constraint);
}

std::vector<SymbolicTensor> LocallyConnected2D::call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) {
  const SymbolicTensor& x = inputs.at(0);  // (batch, rows, cols, in), channels last (Layer::apply)
  expect_input_rank(*this, x.shape(), 4, "(batch, rows, cols, channels)");
  const VariablePtr kernel = weight("kernel"), bias = weight("bias");  // (P, kh*kw*in, filters), (oh, ow, filters)
  const std::int64_t kh = kernel_size_[0], kw = kernel_size_[1], sh = options_.strides[0], sw = options_.strides[1];
  const std::int64_t oh = local_conv_output_length(x.shape().dim(1), kh, sh);
  const std::int64_t ow = local_conv_output_length(x.shape().dim(2), kw, sw);
  if (x.shape().dim(3) * kh * kw != kernel->shape()[1] || oh * ow != kernel->shape()[0])
    raise<ShapeError>("{}: was built for another input shape (kernel {}), got input {} (channels last)",
                      describe(*this), kernel->shape().to_string(), x.shape().to_string());
  const bool channels_first = data_format() == "channels_first";
  SymbolicTensor y = local_conv2d(x, read(ctx, kernel), kh, kw, sh, sw, oh, ow, channels_first);  // (b, oh, ow, f)
  if (bias) {
    SymbolicTensor b = read(ctx, bias);  // (oh, ow, filters)
    // Keras's backend.bias_add adds a channels_first layer's bias *reshaped* (not transposed) to
    // (1, filters, oh, ow); in the channels-last layout that is this view of it.
    if (channels_first) b = ops::transpose(ops::reshape(b, {filters_, oh, ow}), {1, 2, 0});
    y = ops::add(y, b);
  }
  return {apply_activation(options_.activation, y)};
}

nlohmann::json LocallyConnected2D::get_config() const {
  return layer_config(*this, {{"filters", filters_},
                              {"kernel_size", ints_to_json(kernel_size_)},
                              {"strides", ints_to_json(options_.strides)},
                              {"padding", options_.padding},
                              {"data_format", data_format()},
                              {"activation", activation_to_config(options_.activation)},
                              {"use_bias", options_.use_bias},
                              {"kernel_initializer", options_.kernel_initializer.get_config()},
                              {"bias_initializer", options_.bias_initializer.get_config()},
                              {"kernel_regularizer", options_.kernel_regularizer.get_config()},
                              {"bias_regularizer", options_.bias_regularizer.get_config()},
                              {"activity_regularizer", nullptr},
                              {"kernel_constraint", options_.kernel_constraint.get_config()},
                              {"bias_constraint", options_.bias_constraint.get_config()},
                              {"implementation", options_.implementation}});
}

LayerPtr LocallyConnected2D::from_config(const nlohmann::json& config) {
  ConfigReader r(config, "LocallyConnected2D");
  r.check_common();
  LocallyConnected2DOptions options{.strides = r.ints("strides", {1, 1}),
                                    .padding = r.string("padding", "valid"),
                                    .activation = r.activation("activation"),
                                    .use_bias = r.boolean("use_bias", true),
                                    .kernel_initializer = r.initializer("kernel_initializer", "glorot_uniform"),
                                    .bias_initializer = r.initializer("bias_initializer", "zeros"),
                                    .kernel_regularizer = r.regularizer("kernel_regularizer"),
                                    .bias_regularizer = r.regularizer("bias_regularizer"),
                                    .kernel_constraint = r.constraint("kernel_constraint"),
                                    .bias_constraint = r.constraint("bias_constraint"),
                                    .data_format = r.data_format(),
                                    .implementation = r.integer("implementation", 1),
                                    .name = r.name()};
  if (!r.has("kernel_size")) r.fail("the config has no field \"kernel_size\", which this layer needs");
  return r.finish(LocallyConnected2D(r.integer("filters"), r.ints("kernel_size"), options));
}

}  // namespace tower::layers
