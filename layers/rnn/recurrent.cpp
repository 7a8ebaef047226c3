// Recurrent: what SimpleRNN, LSTM and GRU share.
#include "tower/layers/rnn/recurrent.h"

#include "tower/core/error.h"
#include "tower/core/gate_activation.h"
#include "tower/layers/activations/activations.h"
#include "tower/layers/layer_config.h"
#include "tower/layers/layer_utils.h"

namespace tower::layers {

Recurrent::Recurrent(std::string class_name, std::int64_t units, const RecurrentOptions& options, int gates,
                     int states, bool has_recurrent_activation, bool has_unit_forget_bias, bool has_reset_after)
    : Layer(options.name, to_snake_case(class_name)),
      units_(units),
      options_(options),
      gates_(gates),
      states_(states),
      class_name_(std::move(class_name)),
      cell_name_(to_snake_case(class_name_) + "_cell") {
  if (units <= 0) raise<ValueError>("{}: units must be positive, got {}", describe(*this), units);
  // Resolves an option this layer has to its default; refuses one it has not.
  auto resolve = [&](auto& field, bool has, auto fallback, const char* what, const char* owners) {
    if (has && !field) field = fallback;
    if (!has && field)
      raise<ValueError>("{}: {} is not an argument of {} (only of {})", describe(*this), what, class_name_, owners);
  };
  resolve(options_.recurrent_activation, has_recurrent_activation, std::string("sigmoid"), "recurrent_activation",
          "LSTM and GRU");
  resolve(options_.unit_forget_bias, has_unit_forget_bias, true, "unit_forget_bias", "LSTM");
  resolve(options_.reset_after, has_reset_after, true, "reset_after", "GRU");
  try {
    gate_activation_named(options_.activation);
    if (options_.recurrent_activation) gate_activation_named(*options_.recurrent_activation);
  } catch (const ValueError& e) {
    raise<ValueError>("{}: {}", describe(*this), e.what());
  }
}

void Recurrent::build(const std::vector<Shape>& input_shapes) {
  const Shape& x = input_shapes.at(0);
  expect_input_rank(*this, x, 3, "(batch, time, features)");
  expect_known_dim(*this, x, 2, "features");
  const std::int64_t width = gates_ * units_;
  add_weight(weight_name("kernel"), {x[2], width}, options_.kernel_initializer, options_.kernel_regularizer);
  add_weight(weight_name("recurrent_kernel"), {units_, width}, options_.recurrent_initializer,
             options_.recurrent_regularizer);
  if (options_.use_bias) {
    VariablePtr bias = add_weight(weight_name("bias"), bias_shape(), Initializer::constant(0.0), options_.bias_regularizer);
    bias->assign(initial_bias());
  }
}

Shape Recurrent::bias_shape() const { return Shape{gates_ * units_}; }

Tensor Recurrent::initial_bias() const { return options_.bias_initializer(bias_shape()); }

SymbolicTensor Recurrent::input_bias(CallContext& ctx) {
  return options_.use_bias ? read(ctx, weight(weight_name("bias"))) : SymbolicTensor{};
}

ops::RecurrentArgs Recurrent::op_args() const {
  return {.activation = options_.activation.empty() ? "linear" : options_.activation,
          .recurrent_activation = options_.recurrent_activation.value_or("sigmoid"),
          .go_backwards = options_.go_backwards,
          .reset_after = options_.reset_after.value_or(true)};
}

std::vector<SymbolicTensor> Recurrent::call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) {
  const SymbolicTensor& x = inputs.at(0);  // (batch, time, features)
  const VariablePtr kernel = weight(weight_name("kernel"));
  const std::int64_t features = kernel->shape()[0], time = x.shape().dim(1), width = gates_ * units_;
  if (x.rank() != 3 || x.shape().dim(2) != features)
    raise<ShapeError>("{}: expected input (batch, time, {}), got {}", describe(*this), features, x.shape().to_string());
  if (time < 0)
    raise<ShapeError>("{}: needs a known number of time steps, got input {}; give the Input its length "
                      "(shape=(time, features)), or pad the sequences to one length and mask the padding",
                      describe(*this), x.shape().to_string());
  const std::size_t given = inputs.size() - 1;
  if (given != 0 && given != static_cast<std::size_t>(states_))
    raise<ValueError>("{}: initial_state needs {} tensor{} of shape (batch, {}), got {}", describe(*this), states_,
                      states_ == 1 ? "" : "s (h, c)", units_, given);

  // The input projection of every step at once, time-major: (time·batch, features) · kernel + bias.
  const SymbolicTensor rows = ops::reshape(ops::transpose(x, {1, 0, 2}), {-1, features});
  const SymbolicTensor bias = input_bias(ctx);
  const SymbolicTensor projected = bias.defined() ? ops::dense(rows, read(ctx, kernel), bias, "linear")
                                                  : ops::matmul(rows, read(ctx, kernel));
  const SymbolicTensor x_proj = ops::reshape(projected, {time, -1, width});  // (time, batch, gates·units)

  std::vector<SymbolicTensor> initial;
  for (std::size_t i = 1; i < inputs.size(); ++i) {
    if (inputs[i].rank() != 2 || inputs[i].shape().dim(1) != units_)
      raise<ShapeError>("{}: initial state {} has shape {}, expected (batch, {})", describe(*this), i - 1,
                        inputs[i].shape().to_string(), units_);
    initial.push_back(inputs[i]);
  }
  if (initial.empty()) {  // zeros (batch, units), the batch taken from x_proj's first step
    const SymbolicTensor zeros =
        ops::zeros_like(ops::reshape(ops::slice(x_proj, {0, 0, 0}, {1, -1, units_}), {-1, units_}));
    initial.assign(static_cast<std::size_t>(states_), zeros);
  }

  const std::vector<SymbolicTensor> ran = run(ctx, x_proj, initial);  // {states (time, batch, units), finals...}
  std::vector<SymbolicTensor> outputs{options_.return_sequences ? ops::transpose(ran[0], {1, 0, 2}) : ran[1]};
  if (options_.return_state) outputs.insert(outputs.end(), ran.begin() + 1, ran.end());
  return outputs;
}

nlohmann::json Recurrent::get_config() const {
  nlohmann::json fields{{"return_sequences", options_.return_sequences},
                        {"return_state", options_.return_state},
                        {"go_backwards", options_.go_backwards},
                        {"stateful", false},
                        {"unroll", options_.unroll},
                        {"time_major", false},
                        {"units", units_},
                        {"activation", activation_to_config(options_.activation)}};
  if (options_.recurrent_activation) fields["recurrent_activation"] = activation_to_config(*options_.recurrent_activation);
  fields.update({{"use_bias", options_.use_bias},
                 {"kernel_initializer", options_.kernel_initializer.get_config()},
                 {"recurrent_initializer", options_.recurrent_initializer.get_config()},
                 {"bias_initializer", options_.bias_initializer.get_config()}});
  if (options_.unit_forget_bias) fields["unit_forget_bias"] = *options_.unit_forget_bias;
  fields.update({{"kernel_regularizer", options_.kernel_regularizer.get_config()},
                 {"recurrent_regularizer", options_.recurrent_regularizer.get_config()},
                 {"bias_regularizer", options_.bias_regularizer.get_config()},
                 {"activity_regularizer", nullptr},
                 {"kernel_constraint", nullptr},
                 {"recurrent_constraint", nullptr},
                 {"bias_constraint", nullptr},
                 {"dropout", 0.0},
                 {"recurrent_dropout", 0.0}});
  if (options_.recurrent_activation) fields["implementation"] = 2;
  if (options_.reset_after) fields["reset_after"] = *options_.reset_after;
  return layer_config(*this, fields);
}

RecurrentOptions Recurrent::options_from_config(const ConfigReader& r) {
  r.check_common();
  r.expect("stateful", false, "stateful recurrent layers");
  r.expect("time_major", false, "time-major inputs (transpose to (batch, time, features))");
  r.expect("dropout", 0.0, "dropout inside recurrent layers");
  r.expect("recurrent_dropout", 0.0, "recurrent dropout");
  r.expect("zero_output_for_mask", false, "zero_output_for_mask");
  RecurrentOptions options{.activation = r.has("activation") ? r.activation("activation") : "tanh",
                           .use_bias = r.boolean("use_bias", true),
                           .kernel_initializer = r.initializer("kernel_initializer", "glorot_uniform"),
                           .recurrent_initializer = r.initializer("recurrent_initializer", "orthogonal"),
                           .bias_initializer = r.initializer("bias_initializer", "zeros"),
                           .kernel_regularizer = r.regularizer("kernel_regularizer"),
                           .recurrent_regularizer = r.regularizer("recurrent_regularizer"),
                           .bias_regularizer = r.regularizer("bias_regularizer"),
                           .return_sequences = r.boolean("return_sequences", false),
                           .return_state = r.boolean("return_state", false),
                           .go_backwards = r.boolean("go_backwards", false),
                           .unroll = r.boolean("unroll", false),
                           .name = r.name()};
  return options;
}

}  // namespace tower::layers
