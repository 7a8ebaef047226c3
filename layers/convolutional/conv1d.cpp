// Conv1D.
#include "tower/layers/convolutional/conv1d.h"

#include <algorithm>
#include <cctype>

#include "tower/core/error.h"
#include "tower/core/ops.h"
#include "tower/layers/activations/activations.h"
#include "tower/layers/layer_config.h"
#include "tower/layers/layer_utils.h"

namespace tower::layers {

Conv1D::Conv1D(std::int64_t filters, std::int64_t kernel_size, const Conv1DOptions& options)
    : Layer(options.name, "conv1d"), filters_(filters), kernel_size_(kernel_size), options_(options) {
  set_data_format(options.data_format);
  set_activity_regularizer(options.activity_regularizer);
  if (filters <= 0) raise<ValueError>("{}: filters must be positive, got {}", describe(*this), filters);
  if (kernel_size <= 0) raise<ValueError>("{}: kernel_size must be positive, got {}", describe(*this), kernel_size);
  if (options.strides <= 0) raise<ValueError>("{}: strides must be positive, got {}", describe(*this), options.strides);
  if (options.groups < 1 || filters % options.groups != 0)
    raise<ValueError>("{}: groups must be a positive divisor of filters ({}), got {}", describe(*this), filters,
                      options.groups);
  if (options.dilation_rate <= 0)
    raise<ValueError>("{}: dilation_rate must be positive, got {}", describe(*this), options.dilation_rate);
  std::string& p = options_.padding;
  std::transform(p.begin(), p.end(), p.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (p != "valid" && p != "same" && p != "causal")
    raise<ValueError>("{}: padding must be \"valid\", \"same\" or \"causal\", got \"{}\"", describe(*this),
                      options.padding);
  // As Keras (and TF's kernels): a dilated kernel moves one step at a time.
  if (options.strides > 1 && options.dilation_rate > 1)
    raise<ValueError>(
        "{}: strides > 1 are not supported together with dilation_rate > 1 (got strides={}, "
        "dilation_rate={}); use one of them",
        describe(*this), options.strides, options.dilation_rate);
  check_activation_name(options.activation);
}

void Conv1D::build(const std::vector<Shape>& input_shapes) {
  const Shape& in = input_shapes.at(0);
  expect_input_rank(*this, in, 3, "(batch, steps, channels)");
  expect_known_dim(*this, in, -1, "channels");
  if (in.dim(-1) % options_.groups != 0)
    raise<ShapeError>("{}: the input's {} channels do not split into {} groups", describe(*this), in.dim(-1),
                      options_.groups);
  set_constraint(add_weight("kernel", {kernel_size_, in.dim(-1) / options_.groups, filters_},
                            options_.kernel_initializer, options_.kernel_regularizer),
                 options_.kernel_constraint);
  if (options_.use_bias)
    set_constraint(add_weight("bias", {filters_}, options_.bias_initializer, options_.bias_regularizer),
                   options_.bias_constraint);
}

std::vector<SymbolicTensor> Conv1D::call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) {
  const SymbolicTensor& x = inputs.at(0);  // (batch, steps, in)
  expect_input_rank(*this, x.shape(), 3, "(batch, steps, channels)");
  const VariablePtr kernel = weight("kernel"), bias = weight("bias");  // (k, in / groups, filters), (filters,)
  const std::int64_t in = kernel->shape()[1] * options_.groups, steps = x.shape().dim(1);
  if (x.shape().dim(-1) != in)
    raise<ShapeError>("{}: expected input with {} channels (its last axis), got {}", describe(*this), in,
                      x.shape().to_string());
  if (steps < 0)
    raise<ShapeError>("{}: needs a known number of steps, got input {}; give the Input its length", describe(*this),
                      x.shape().to_string());
  const std::int64_t span = (kernel_size_ - 1) * options_.dilation_rate;  // the dilated kernel's reach
  const bool causal = options_.padding == "causal";
  if (options_.padding == "valid" && steps < span + 1)
    raise<ShapeError>(
        "{}: input {} has {} steps, fewer than the {} the dilated kernel spans with \"valid\" padding; "
        "use padding \"same\" or \"causal\", or a longer input",
        describe(*this), x.shape().to_string(), steps, span + 1);
  SymbolicTensor x4 = ops::reshape(x, {-1, 1, steps, in});     // (batch, 1, steps, in)
  if (causal) x4 = ops::pad(x4, {0, 0, 0, 0, span, 0, 0, 0});  // (batch, 1, span + steps, in): y[t] sees x[.. t]
  // The stored kernel keeps Keras's (k, in / groups, filters); the op reads a (1, k, in / groups,
  // filters) view of it.
  const SymbolicTensor k4 = ops::reshape(read(ctx, kernel), {1, kernel_size_, in / options_.groups, filters_});
  SymbolicTensor y = ops::conv2d(x4, k4,
                                 {.strides = {1, options_.strides},
                                  .padding = causal ? "valid" : options_.padding,
                                  .dilation_rate = {1, options_.dilation_rate},
                                  .groups = options_.groups});  // (batch, 1, out, filters)
  y = ops::reshape(y, {-1, y.shape().dim(2), filters_});                           // (batch, out, filters)
  return {apply_bias_and_activation(options_.activation, y, bias ? read(ctx, bias) : SymbolicTensor())};
}

nlohmann::json Conv1D::get_config() const {
  return layer_config(*this, {{"filters", filters_},
                              {"kernel_size", ints_to_json({kernel_size_})},
                              {"strides", ints_to_json({options_.strides})},
                              {"padding", options_.padding},
                              {"data_format", data_format()},
                              {"dilation_rate", ints_to_json({options_.dilation_rate})},
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

LayerPtr Conv1D::from_config(const nlohmann::json& config) {
  ConfigReader r(config, "Conv1D");
  r.check_common();
  r.expect("lora_rank", nullptr, "LoRA");
  Conv1DOptions options{.strides = r.one_int("strides", 1),
                        .padding = r.string("padding", "valid"),
                        .dilation_rate = r.one_int("dilation_rate", 1),
                        .groups = r.integer("groups", 1),
                        .activation = r.activation("activation"),
                        .use_bias = r.boolean("use_bias", true),
                        .kernel_initializer = r.initializer("kernel_initializer", "glorot_uniform"),
                        .bias_initializer = r.initializer("bias_initializer", "zeros"),
                        .kernel_regularizer = r.regularizer("kernel_regularizer"),
                        .bias_regularizer = r.regularizer("bias_regularizer"),
                        .kernel_constraint = r.constraint("kernel_constraint"),
                        .bias_constraint = r.constraint("bias_constraint"),
                        .data_format = r.data_format(), .name = r.name()};
  if (!r.has("kernel_size")) r.fail("the config has no field \"kernel_size\", which this layer needs");
  return r.finish(Conv1D(r.integer("filters"), r.one_int("kernel_size", 0), options));
}

}  // namespace tower::layers
