// ConvLSTM2D.
#include "tower/layers/rnn/conv_lstm2d.h"

#include "tower/core/error.h"
#include "tower/core/ops.h"
#include "tower/core/random.h"
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
  for (const auto& [rate, what] : {std::pair{options.dropout, "dropout"}, {options.recurrent_dropout, "recurrent_dropout"}})
    if (!(rate >= 0.0 && rate < 1.0))
      raise<ValueError>("{}: {} must be in [0, 1) (the fraction dropped), got {}", describe(*this), what, rate);
  // A seed is drawn only for masks, so that a layer without dropout leaves the global seed's sequence
  // (the initial weights of the layers made after it) as it was.
  if (options.seed)
    seed_ = *options.seed;
  else if (options.dropout > 0.0 || options.recurrent_dropout > 0.0)
    seed_ = next_seed();
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

namespace {
// Channel block k (F wide) of a (..., ..., ..., 4F) tensor: a gate of z, or of a kernel.
SymbolicTensor gate(const SymbolicTensor& z, std::int64_t k, std::int64_t F) {
  return ops::slice(z, {0, 0, 0, k * F}, {-1, -1, -1, F});
}
}  // namespace

SymbolicTensor ConvLSTM2D::input_convolution(CallContext& ctx, const SymbolicTensor& x, const SymbolicTensor& kernel) {
  const auto& d = x.shape().dims();  // (batch, time, rows, cols, channels)
  const std::int64_t F = filters_;
  const SymbolicTensor bias = options_.use_bias ? read(ctx, weight(std::string(kCell) + "bias")) : SymbolicTensor();
  // (batch·time, rows, cols, channels) * k + b -> (batch·time, r', c', k's width)
  auto convolve = [&](const SymbolicTensor& xin, const SymbolicTensor& k, const SymbolicTensor& b) {
    const SymbolicTensor z = ops::conv2d(ops::reshape(xin, {-1, d[2], d[3], d[4]}), k,
                                         {.strides = options_.strides, .padding = options_.padding,
                                          .dilation_rate = options_.dilation_rate});
    return b.defined() ? ops::bias_add(z, b) : z;
  };
  if (!ctx.training || options_.dropout == 0.0) return convolve(x, kernel, bias);
  // One mask per gate, (batch, 1, rows, cols, channels) broadcast over the steps (the 1 leaves the
  // values those of a (batch, rows, cols, channels) mask): each gate convolves its own dropped x
  // with its block of the kernel, masks seeded seed_ + 0..3.
  const SymbolicTensor ones = ops::ones_like(ops::slice(x, {0, 0, 0, 0, 0}, {-1, 1, -1, -1, -1}));
  const auto masks = recurrent_dropout_masks(ctx, ones, options_.dropout, seed_, 4, 0);
  std::vector<SymbolicTensor> parts;
  for (int g = 0; g < 4; ++g)
    parts.push_back(convolve(ops::multiply(x, masks[static_cast<std::size_t>(g)]), gate(kernel, g, F),
                             bias.defined() ? ops::slice(bias, {g * F}, {F}) : SymbolicTensor()));
  return ops::concat(parts, 3);
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

  // The input convolution of every step at once -> (batch, time, r', c', 4F).
  SymbolicTensor z_x = input_convolution(ctx, x, kernel);
  const std::int64_t rows = z_x.shape().dim(1), cols = z_x.shape().dim(2);
  z_x = ops::reshape(z_x, {-1, time, rows, cols, 4 * F});

  auto step_of = [&](std::int64_t t) {  // (batch, r', c', 4F)
    return ops::reshape(ops::slice(z_x, {0, t, 0, 0, 0}, {-1, 1, -1, -1, -1}), {-1, rows, cols, 4 * F});
  };
  SymbolicTensor h, c;
  if (inputs.size() == 3) {
    h = inputs[1], c = inputs[2];
  } else if (options_.stateful) {
    const auto states = stateful_initial_states(ctx, *this, *state_variables_, 2, {rows, cols, F}, x.dtype());
    h = states[0], c = states[1];
  } else {
    h = c = ops::zeros_like(gate(step_of(0), 0, F));
  }
  SymbolicTensor mask = input_mask(ctx, 0);  // (batch, time)
  if (mask.defined() && mask.dtype() != x.dtype()) mask = ops::cast(mask, x.dtype());
  // Recurrent dropout: one mask (batch, r', c', F) per gate for h_{t-1}, seeded seed_ + 4..7, and
  // each gate's recurrent convolution with its block of the recurrent kernel.
  std::vector<SymbolicTensor> recurrent_masks, recurrent_gates;
  if (ctx.training && options_.recurrent_dropout > 0.0) {
    recurrent_masks = recurrent_dropout_masks(ctx, ops::ones_like(h), options_.recurrent_dropout, seed_, 4, 4);
    for (int g = 0; g < 4; ++g) recurrent_gates.push_back(gate(recurrent_kernel, g, F));
  }

  std::vector<SymbolicTensor> sequence;
  for (std::int64_t s = 0; s < time; ++s) {
    const std::int64_t t = options_.go_backwards ? time - 1 - s : s;
    std::vector<SymbolicTensor> z(4);  // the gates' pre-activations (batch, r', c', F)
    if (recurrent_masks.empty()) {
      const SymbolicTensor all = ops::add(step_of(t), ops::conv2d(h, recurrent_kernel, {.padding = "same"}));
      for (int g = 0; g < 4; ++g) z[static_cast<std::size_t>(g)] = gate(all, g, F);
    } else {
      const SymbolicTensor x_t = step_of(t);
      for (std::size_t g = 0; g < 4; ++g)
        z[g] = ops::add(gate(x_t, static_cast<std::int64_t>(g), F),
                        ops::conv2d(ops::multiply(h, recurrent_masks[g]), recurrent_gates[g], {.padding = "same"}));
    }
    const SymbolicTensor i = apply_activation(options_.recurrent_activation, z[0]);
    const SymbolicTensor f = apply_activation(options_.recurrent_activation, z[1]);
    const SymbolicTensor g = apply_activation(options_.activation, z[2]);
    const SymbolicTensor o = apply_activation(options_.recurrent_activation, z[3]);
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
  if (options_.stateful && ctx.updates)  // the next call starts from these
    for (std::size_t k = 0; k < state_variables_->size(); ++k)
      ctx.updates->push_back(ops::assign(ctx.graph.variable((*state_variables_)[k]), k == 0 ? h : c));
  std::vector<SymbolicTensor> outputs{options_.return_sequences ? ops::concat(sequence, 1) : h};
  if (options_.return_state) outputs.insert(outputs.end(), {h, c});
  return outputs;
}

void ConvLSTM2D::reset_states() {
  for (const auto& v : *state_variables_) v->assign(Tensor::zeros(v->shape(), v->dtype()));
}

std::vector<SymbolicTensor> ConvLSTM2D::compute_mask(const std::vector<SymbolicTensor>&,
                                                     const std::vector<SymbolicTensor>& masks) const {
  return {options_.return_sequences && !masks.empty() ? masks[0] : SymbolicTensor()};
}

nlohmann::json ConvLSTM2D::get_config() const {
  nlohmann::json fields{{"return_sequences", options_.return_sequences},
                        {"return_state", options_.return_state},
                        {"go_backwards", options_.go_backwards},
                        {"stateful", options_.stateful},
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
                        {"dropout", options_.dropout},
                        {"recurrent_dropout", options_.recurrent_dropout}};
  if (options_.seed) fields["seed"] = *options_.seed;
  return layer_config(*this, fields);
}

LayerPtr ConvLSTM2D::from_config(const nlohmann::json& config) {
  ConfigReader r(config, "ConvLSTM2D");
  r.check_common();
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
                            .dropout = r.number("dropout", 0.0),
                            .recurrent_dropout = r.number("recurrent_dropout", 0.0),
                            .stateful = r.boolean("stateful", false),
                            .name = r.name()};
  if (r.has("seed")) options.seed = static_cast<std::uint64_t>(r.integer("seed"));
  return r.finish(ConvLSTM2D(r.integer("filters"), r.ints("kernel_size"), options));
}

}  // namespace tower::layers
