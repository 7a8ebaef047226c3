// ConvLSTM2D.
#include "tower/layers/rnn/conv_lstm2d.h"

#include "tower/core/error.h"
#include "tower/core/ops.h"
#include "tower/layers/activations/activations.h"
#include "tower/layers/layer_config.h"
#include "tower/layers/layer_utils.h"
#include "tower/layers/rnn/recurrent.h"

namespace tower::layers {

namespace {
const char* kCell = "conv_lstm_cell/";  // Keras's weight names: conv_lstm2d/conv_lstm_cell/kernel:0
}

ConvLSTM2D::ConvLSTM2D(std::int64_t filters, const std::vector<std::int64_t>& kernel_size,
                       const ConvLSTM2DOptions& options)
    : Layer(options.name, "conv_lstm2d"), filters_(filters), options_(options) {
  if (filters <= 0) raise<ValueError>("{}: filters must be positive, got {}", describe(*this), filters);
  kernel_size_ = normalize_tuple(*this, "kernel_size", kernel_size, 2);
  options_.strides = normalize_tuple(*this, "strides", options.strides, 2);
  options_.dilation_rate = normalize_tuple(*this, "dilation_rate", options.dilation_rate, 2);
  options_.padding = normalize_padding(*this, options.padding);
  check_activation_name(options_.activation);
  check_activation_name(options_.recurrent_activation);
}

void ConvLSTM2D::build(const std::vector<Shape>& input_shapes) {
  const Shape& x = input_shapes.at(0);
  expect_input_rank(*this, x, 5, "(batch, time, rows, cols, channels)");
  expect_known_dim(*this, x, 4, "channels");
  const std::int64_t width = 4 * filters_;
  add_weight(std::string(kCell) + "kernel", {kernel_size_[0], kernel_size_[1], x[4], width},
             options_.kernel_initializer, options_.kernel_regularizer);
  add_weight(std::string(kCell) + "recurrent_kernel", {kernel_size_[0], kernel_size_[1], filters_, width},
             options_.recurrent_initializer, options_.recurrent_regularizer);
  if (!options_.use_bias) return;
  VariablePtr bias = add_weight(std::string(kCell) + "bias", {width}, Initializer::constant(0.0), options_.bias_regularizer);
  bias->assign(options_.unit_forget_bias ? lstm_bias_with_unit_forget(options_.bias_initializer, filters_)
                                         : options_.bias_initializer(Shape{width}));
}

std::vector<SymbolicTensor> ConvLSTM2D::call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) {
  const SymbolicTensor& x = inputs.at(0);  // (batch, time, rows, cols, channels)
  if (x.rank() != 5)
    raise<ShapeError>("{}: expected input (batch, time, rows, cols, channels), got {}", describe(*this),
                      x.shape().to_string());
  const std::int64_t time = x.shape().dim(1), F = filters_;
  if (time < 0)
    raise<ShapeError>("{}: needs a known number of time steps, got input {}", describe(*this), x.shape().to_string());
  if (inputs.size() != 1 && inputs.size() != 3)
    raise<ValueError>("{}: initial_state needs 2 tensors (h, c), got {}", describe(*this), inputs.size() - 1);
  const SymbolicTensor kernel = read(ctx, weight(std::string(kCell) + "kernel"));
  const SymbolicTensor recurrent_kernel = read(ctx, weight(std::string(kCell) + "recurrent_kernel"));

  // The input convolution of every step at once: (batch·time, rows, cols, channels) -> (batch, time, r', c', 4F).
  const auto& d = x.shape().dims();
  SymbolicTensor z_x = ops::conv2d(ops::reshape(x, {-1, d[2], d[3], d[4]}), kernel,
                                   {.strides = options_.strides, .padding = options_.padding,
                                    .dilation_rate = options_.dilation_rate});
  if (options_.use_bias) z_x = ops::bias_add(z_x, read(ctx, weight(std::string(kCell) + "bias")));
  const std::int64_t rows = z_x.shape().dim(1), cols = z_x.shape().dim(2);
  z_x = ops::reshape(z_x, {-1, time, rows, cols, 4 * F});

  auto step_of = [&](std::int64_t t) {  // (batch, r', c', 4F)
    return ops::reshape(ops::slice(z_x, {0, t, 0, 0, 0}, {-1, 1, -1, -1, -1}), {-1, rows, cols, 4 * F});
  };
  auto gate = [&](const SymbolicTensor& z, std::int64_t k) { return ops::slice(z, {0, 0, 0, k * F}, {-1, -1, -1, F}); };
  SymbolicTensor h, c;
  if (inputs.size() == 3) {
    h = inputs[1], c = inputs[2];
  } else {
    h = c = ops::zeros_like(gate(step_of(0), 0));
  }
  SymbolicTensor mask = input_mask(ctx, 0);  // (batch, time)
  if (mask.defined() && mask.dtype() != x.dtype()) mask = ops::cast(mask, x.dtype());

  std::vector<SymbolicTensor> sequence;
  for (std::int64_t s = 0; s < time; ++s) {
    const std::int64_t t = options_.go_backwards ? time - 1 - s : s;
    const SymbolicTensor z = ops::add(step_of(t), ops::conv2d(h, recurrent_kernel, {.padding = "same"}));
    const SymbolicTensor i = apply_activation(options_.recurrent_activation, gate(z, 0));
    const SymbolicTensor f = apply_activation(options_.recurrent_activation, gate(z, 1));
    const SymbolicTensor g = apply_activation(options_.activation, gate(z, 2));
    const SymbolicTensor o = apply_activation(options_.recurrent_activation, gate(z, 3));
    SymbolicTensor c_next = ops::add(ops::multiply(f, c), ops::multiply(i, g));
    SymbolicTensor h_next = ops::multiply(o, apply_activation(options_.activation, c_next));
    if (mask.defined()) {  // a masked step keeps the states: m next + (1 - m) before, m (batch, 1, 1, 1)
      const SymbolicTensor m = ops::reshape(ops::slice(mask, {0, t}, {-1, 1}), {-1, 1, 1, 1});
      const SymbolicTensor not_m = ops::subtract(ops::ones_like(m), m);
      c_next = ops::add(ops::multiply(m, c_next), ops::multiply(not_m, c));
      h_next = ops::add(ops::multiply(m, h_next), ops::multiply(not_m, h));
    }
    h = h_next, c = c_next;
    if (options_.return_sequences) sequence.push_back(ops::reshape(h, {-1, 1, rows, cols, F}));
  }
  std::vector<SymbolicTensor> outputs{options_.return_sequences ? ops::concat(sequence, 1) : h};
  if (options_.return_state) outputs.insert(outputs.end(), {h, c});
  return outputs;
}

std::vector<SymbolicTensor> ConvLSTM2D::compute_mask(const std::vector<SymbolicTensor>&,
                                                     const std::vector<SymbolicTensor>& masks) const {
  return {options_.return_sequences && !masks.empty() ? masks[0] : SymbolicTensor()};
}

nlohmann::json ConvLSTM2D::get_config() const {
  return layer_config(*this, {{"return_sequences", options_.return_sequences},
                              {"return_state", options_.return_state},
                              {"go_backwards", options_.go_backwards},
                              {"stateful", false},
                              {"unroll", false},
                              {"filters", filters_},
                              {"kernel_size", ints_to_json(kernel_size_)},
                              {"strides", ints_to_json(options_.strides)},
                              {"padding", options_.padding},
                              {"data_format", "channels_last"},
                              {"dilation_rate", ints_to_json(options_.dilation_rate)},
                              {"activation", activation_to_config(options_.activation)},
                              {"recurrent_activation", activation_to_config(options_.recurrent_activation)},
                              {"use_bias", options_.use_bias},
                              {"kernel_initializer", options_.kernel_initializer.get_config()},
                              {"recurrent_initializer", options_.recurrent_initializer.get_config()},
                              {"bias_initializer", options_.bias_initializer.get_config()},
                              {"unit_forget_bias", options_.unit_forget_bias},
                              {"kernel_regularizer", options_.kernel_regularizer.get_config()},
                              {"recurrent_regularizer", options_.recurrent_regularizer.get_config()},
                              {"bias_regularizer", options_.bias_regularizer.get_config()},
                              {"activity_regularizer", nullptr},
                              {"kernel_constraint", nullptr},
                              {"recurrent_constraint", nullptr},
                              {"bias_constraint", nullptr},
                              {"dropout", 0.0},
                              {"recurrent_dropout", 0.0}});
}

LayerPtr ConvLSTM2D::from_config(const nlohmann::json& config) {
  ConfigReader r(config, "ConvLSTM2D");
  r.check_common();
  r.expect("stateful", false, "stateful ConvLSTM2D layers");
  r.expect("dropout", 0.0, "dropout in ConvLSTM2D");
  r.expect("recurrent_dropout", 0.0, "recurrent dropout in ConvLSTM2D");
  ConvLSTM2DOptions options{.strides = r.ints("strides", {1, 1}),
                            .padding = r.padding("padding"),
                            .dilation_rate = r.ints("dilation_rate", {1, 1}),
                            .activation = r.has("activation") ? r.activation("activation") : "tanh",
                            .recurrent_activation =
                                r.has("recurrent_activation") ? r.activation("recurrent_activation") : "hard_sigmoid",
                            .use_bias = r.boolean("use_bias", true),
                            .kernel_initializer = r.initializer("kernel_initializer", "glorot_uniform"),
                            .recurrent_initializer = r.initializer("recurrent_initializer", "orthogonal"),
                            .bias_initializer = r.initializer("bias_initializer", "zeros"),
                            .unit_forget_bias = r.boolean("unit_forget_bias", true),
                            .kernel_regularizer = r.regularizer("kernel_regularizer"),
                            .recurrent_regularizer = r.regularizer("recurrent_regularizer"),
                            .bias_regularizer = r.regularizer("bias_regularizer"),
                            .return_sequences = r.boolean("return_sequences", false),
                            .return_state = r.boolean("return_state", false),
                            .go_backwards = r.boolean("go_backwards", false),
                            .name = r.name()};
  return r.finish(ConvLSTM2D(r.integer("filters"), r.ints("kernel_size"), options));
}

}  // namespace tower::layers
