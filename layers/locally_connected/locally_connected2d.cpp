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
  if (options_.implementation < 1 || options_.implementation > 3)
    raise<ValueError>("{}: Unrecognized implementation mode: {}. Keras knows 1 (a kernel per output position), "
                      "2 (a dense masked kernel) and 3 (a sparse kernel)",
                      describe(*this), options_.implementation);
  if (options_.padding != "valid" && options_.implementation == 1)
    raise<ValueError>("{}: Invalid border mode for LocallyConnected2D (only \"valid\" is supported if implementation is "
                      "1): {}. Use implementation 2 or 3 for padding \"same\"",
                      describe(*this), options.padding);
  check_activation_name(options.activation);
}

LocalConvGeometry LocallyConnected2D::geometry(const Shape& in) const {
  return local_conv_geometry(in.dim(1), in.dim(2), in.dim(3), kernel_size_[0], kernel_size_[1], options_.strides[0],
                             options_.strides[1], filters_, options_.padding, data_format() == "channels_first");
}

void LocallyConnected2D::build(const std::vector<Shape>& input_shapes) {
  const Shape& in = input_shapes.at(0);  // (batch, rows, cols, in), channels last
  expect_input_rank(*this, in, 4, "(batch, rows, cols, channels)");
  expect_known_dim(*this, in, 1, "rows");
  expect_known_dim(*this, in, 2, "cols");
  expect_known_dim(*this, in, 3, "channels");
  const LocalConvGeometry g = geometry(in);
  if (g.out_rows <= 0 || g.out_cols <= 0)
    raise<ShapeError>("{}: input {} is smaller than the kernel ({}, {}); the output would be empty. Use a "
                      "larger input or a smaller kernel_size",
                      describe(*this), in.to_string(), kernel_size_[0], kernel_size_[1]);
  // tf.keras's kernel of this implementation (local_conv.h), so that files and get_weights are Keras's.
  set_constraint(add_weight("kernel", local_conv_kernel_shape(g, options_.implementation, /*one_d=*/false),
                            options_.kernel_initializer, options_.kernel_regularizer),
                 options_.kernel_constraint);
  if (options_.use_bias)
    set_constraint(
        add_weight("bias", {g.out_rows, g.out_cols, filters_}, options_.bias_initializer, options_.bias_regularizer),
        options_.bias_constraint);
}

std::vector<SymbolicTensor> LocallyConnected2D::call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) {
  const SymbolicTensor& x = inputs.at(0);  // (batch, rows, cols, in), channels last (Layer::apply)
  expect_input_rank(*this, x.shape(), 4, "(batch, rows, cols, channels)");
  const VariablePtr kernel = weight("kernel"), bias = weight("bias");  // Keras's kernel, (oh, ow, filters)
  const LocalConvGeometry g = geometry(x.shape());
  if (kernel->shape() != local_conv_kernel_shape(g, options_.implementation, false))
    raise<ShapeError>("{}: was built for another input shape (kernel {}), got input {} (channels last)",
                      describe(*this), kernel->shape().to_string(), x.shape().to_string());
  SymbolicTensor y = local_conv(x, read(ctx, kernel), g, options_.implementation);  // (batch, oh, ow, filters)
  if (bias) {
    SymbolicTensor b = read(ctx, bias);  // (oh, ow, filters)
    // Keras's backend.bias_add adds a channels_first layer's bias *reshaped* (not transposed) to
    // (1, filters, oh, ow); in the channels-last layout that is this view of it.
    if (g.channels_first) b = ops::transpose(ops::reshape(b, {filters_, g.out_rows, g.out_cols}), {1, 2, 0});
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
