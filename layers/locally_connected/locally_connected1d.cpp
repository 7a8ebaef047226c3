// LocallyConnected1D.
#include "tower/layers/locally_connected/locally_connected1d.h"

#include "tower/core/error.h"
#include "tower/core/ops.h"
#include "tower/layers/activations/activations.h"
#include "tower/layers/layer_config.h"
#include "tower/layers/layer_utils.h"
#include "tower/layers/locally_connected/local_conv.h"

namespace tower::layers {

LocallyConnected1D::LocallyConnected1D(std::int64_t filters, std::int64_t kernel_size,
                                       const LocallyConnected1DOptions& options)
    : Layer(options.name, "locally_connected1d"), filters_(filters), kernel_size_(kernel_size), options_(options) {
  set_data_format(options.data_format);
  set_activity_regularizer(options.activity_regularizer);
  if (filters <= 0) raise<ValueError>("{}: filters must be positive, got {}", describe(*this), filters);
  if (kernel_size <= 0) raise<ValueError>("{}: kernel_size must be positive, got {}", describe(*this), kernel_size);
  if (options.strides <= 0) raise<ValueError>("{}: strides must be positive, got {}", describe(*this), options.strides);
  options_.padding = normalize_padding(*this, options.padding);
  if (options_.implementation < 1 || options_.implementation > 3)
    raise<ValueError>("{}: Unrecognized implementation mode: {}. Keras knows 1 (a kernel per output position), "
                      "2 (a dense masked kernel) and 3 (a sparse kernel)",
                      describe(*this), options_.implementation);
  if (options_.padding != "valid" && options_.implementation == 1)
    raise<ValueError>("{}: Invalid border mode for LocallyConnected1D (only \"valid\" is supported if implementation is "
                      "1): {}. Use implementation 2 or 3 for padding \"same\"",
                      describe(*this), options.padding);
  check_activation_name(options.activation);
}

LocalConvGeometry LocallyConnected1D::geometry(const Shape& in) const {
  return local_conv_geometry(1, in.dim(1), in.dim(2), 1, kernel_size_, 1, options_.strides, filters_,
                             options_.padding, data_format() == "channels_first");
}

void LocallyConnected1D::build(const std::vector<Shape>& input_shapes) {
  const Shape& in = input_shapes.at(0);  // (batch, steps, in), channels last
  expect_input_rank(*this, in, 3, "(batch, steps, channels)");
  expect_known_dim(*this, in, 1, "steps");
  expect_known_dim(*this, in, 2, "channels");
  const LocalConvGeometry g = geometry(in);
  if (g.out_cols <= 0)
    raise<ShapeError>("{}: input {} has fewer steps than kernel_size {}; the output would be empty. Use a longer "
                      "input or a smaller kernel_size",
                      describe(*this), in.to_string(), kernel_size_);
  // tf.keras's kernel of this implementation (local_conv.h), so that files and get_weights are Keras's.
  set_constraint(add_weight("kernel", local_conv_kernel_shape(g, options_.implementation, /*one_d=*/true),
                            options_.kernel_initializer, options_.kernel_regularizer),
                 options_.kernel_constraint);
  if (options_.use_bias)
    set_constraint(add_weight("bias", {g.out_cols, filters_}, options_.bias_initializer, options_.bias_regularizer),
                   options_.bias_constraint);
}

std::vector<SymbolicTensor> LocallyConnected1D::call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) {
  const SymbolicTensor& x = inputs.at(0);  // (batch, steps, in), channels last (Layer::apply)
  expect_input_rank(*this, x.shape(), 3, "(batch, steps, channels)");
  const VariablePtr kernel = weight("kernel"), bias = weight("bias");  // Keras's kernel, (out, filters)
  const std::int64_t steps = x.shape().dim(1), in = x.shape().dim(2);
  const LocalConvGeometry g = geometry(x.shape());
  const std::int64_t out = g.out_cols;
  if (kernel->shape() != local_conv_kernel_shape(g, options_.implementation, true))
    raise<ShapeError>("{}: was built for another input shape (kernel {}), got input {} (channels last)",
                      describe(*this), kernel->shape().to_string(), x.shape().to_string());
  const SymbolicTensor x4 = ops::reshape(x, {-1, 1, steps, in});                     // (batch, 1, steps, in)
  SymbolicTensor y = local_conv(x4, read(ctx, kernel), g, options_.implementation);  // (batch, 1, out, filters)
  y = ops::reshape(y, {-1, out, filters_});                                          // (batch, out, filters)
  if (bias) {
    SymbolicTensor b = read(ctx, bias);  // (out, filters)
    // Keras adds a channels_first layer's bias reshaped (not transposed) to (1, filters, out).
    if (g.channels_first) b = ops::transpose(ops::reshape(b, {filters_, out}), {1, 0});
    y = ops::add(y, b);
  }
  return {apply_activation(options_.activation, y)};
}

nlohmann::json LocallyConnected1D::get_config() const {
  return layer_config(*this, {{"filters", filters_},
                              {"kernel_size", ints_to_json({kernel_size_})},
                              {"strides", ints_to_json({options_.strides})},
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

LayerPtr LocallyConnected1D::from_config(const nlohmann::json& config) {
  ConfigReader r(config, "LocallyConnected1D");
  r.check_common();
  LocallyConnected1DOptions options{.strides = r.one_int("strides", 1),
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
  return r.finish(LocallyConnected1D(r.integer("filters"), r.one_int("kernel_size", 0), options));
}

}  // namespace tower::layers
