// Recurrent: what SimpleRNN, LSTM and GRU share.
#include "tower/layers/rnn/recurrent.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "tower/core/error.h"
#include "tower/core/random.h"
#include "tower/layers/engine/replication.h"
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
      cell_name_(to_snake_case(class_name_) + "_cell"),
      seed_(options.seed ? *options.seed : next_seed()),
      seed_given_(options.seed.has_value()) {
  if (units <= 0) raise<ValueError>("{}: units must be positive, got {}", describe(*this), units);
  for (const auto& [rate, what] : {std::pair{options.dropout, "dropout"}, {options.recurrent_dropout, "recurrent_dropout"}})
    if (!(rate >= 0.0 && rate < 1.0))
      raise<ValueError>("{}: {} must be in [0, 1) (the fraction dropped), got {}", describe(*this), what, rate);
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
  set_constraint(add_weight(weight_name("kernel"), {x[2], width}, options_.kernel_initializer, options_.kernel_regularizer),
                 options_.kernel_constraint);
  set_constraint(add_weight(weight_name("recurrent_kernel"), {units_, width}, options_.recurrent_initializer,
                            options_.recurrent_regularizer),
                 options_.recurrent_constraint);
  if (options_.use_bias) {
    VariablePtr bias = add_weight(weight_name("bias"), bias_shape(), Initializer::constant(0.0), options_.bias_regularizer);
    bias->assign(initial_bias());
    set_constraint(bias, options_.bias_constraint);
  }
}

Tensor lstm_bias_with_unit_forget(const Initializer& bias_initializer, std::int64_t units) {
  const auto i = bias_initializer(Shape{units}).to_vector<float>();
  const auto co = bias_initializer(Shape{2 * units}).to_vector<float>();
  std::vector<float> value(static_cast<std::size_t>(4 * units), 1.0f);
  std::copy(i.begin(), i.end(), value.begin());
  std::copy(co.begin(), co.end(), value.begin() + 2 * units);
  return Tensor::from_vector<float>(Shape{4 * units}, value);
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

SymbolicTensor Recurrent::activate(const SymbolicTensor& x) const {
  return apply_activation(op_args().activation, x);
}

SymbolicTensor Recurrent::activate_gate(const SymbolicTensor& x) const {
  return apply_activation(op_args().recurrent_activation, x);
}

SymbolicTensor Recurrent::gate_columns(const SymbolicTensor& x, std::int64_t gate) const {
  return ops::slice(x, {0, gate * units_}, {-1, units_});
}

std::vector<SymbolicTensor> recurrent_dropout_masks(CallContext& ctx, const SymbolicTensor& ones, double rate,
                                                    std::uint64_t seed, int count, int first) {
  std::vector<SymbolicTensor> masks;
  const SymbolicTensor first_row = ctx.replica ? ctx.replica->first_row : SymbolicTensor();
  for (int k = 0; k < count; ++k)
    masks.push_back(ops::dropout(ones, rate, seed + static_cast<std::uint64_t>(first + k), first_row)[1]);
  return masks;
}

std::vector<SymbolicTensor> Recurrent::dropout_masks(CallContext& ctx, const SymbolicTensor& ones, double rate,
                                                     int count, int first) const {
  return recurrent_dropout_masks(ctx, ones, rate, seed_, count, first);
}

SymbolicTensor Recurrent::project(CallContext& ctx, const SymbolicTensor& x) {
  const SymbolicTensor kernel = read(ctx, weight(weight_name("kernel")));  // (features, gates·units)
  const std::int64_t features = kernel.shape()[0], width = gates_ * units_;
  const SymbolicTensor bias = input_bias(ctx);
  const SymbolicTensor x_steps = ops::transpose(x, {1, 0, 2});  // (time, batch, features)
  // (time·batch, features) · kernel + bias, time-major rows; xin (time, batch, features).
  auto rows_times = [&](const SymbolicTensor& xin, const SymbolicTensor& k, const SymbolicTensor& b) {
    const SymbolicTensor rows = ops::reshape(xin, {-1, features});
    return b.defined() ? ops::dense(rows, k, b, "linear") : ops::matmul(rows, k);
  };
  SymbolicTensor projected;
  if (ctx.training && options_.dropout > 0.0) {
    // One mask (batch, features) per sequence, or one per gate with recurrent dropout (Keras's
    // implementation 1), broadcast over the steps.
    const SymbolicTensor ones = ops::ones_like(ops::reshape(ops::slice(x, {0, 0, 0}, {-1, 1, -1}), {-1, features}));
    const bool per_gate = options_.recurrent_dropout > 0.0;
    const auto masks = dropout_masks(ctx, ones, options_.dropout, per_gate ? gates_ : 1, 0);
    auto dropped = [&](const SymbolicTensor& mask) {
      return ops::multiply(x_steps, ops::reshape(mask, {1, -1, features}));
    };
    if (!per_gate) {
      projected = rows_times(dropped(masks[0]), kernel, bias);
    } else {
      std::vector<SymbolicTensor> parts;
      for (int g = 0; g < gates_; ++g)
        parts.push_back(rows_times(dropped(masks[static_cast<std::size_t>(g)]), gate_columns(kernel, g),
                                   bias.defined() ? ops::slice(bias, {g * units_}, {units_}) : SymbolicTensor()));
      projected = ops::concat(parts, 1);
    }
  } else {
    projected = rows_times(x_steps, kernel, bias);
  }
  // Batch and time may both be unknown until a Plan is compiled: reshape_like takes them from x_steps then.
  return ops::reshape_like(projected, x_steps, 2, {width});  // (time, batch, gates·units)
}

std::vector<SymbolicTensor> Recurrent::run_unrolled(CallContext& ctx, const SymbolicTensor& x_proj,
                                                    std::vector<SymbolicTensor> states,
                                                    const std::vector<SymbolicTensor>& recurrent_masks,
                                                    const SymbolicTensor& mask, std::int64_t time) {
  const std::int64_t width = gates_ * units_;
  std::vector<SymbolicTensor> sequence;
  for (std::int64_t s = 0; s < time; ++s) {
    const std::int64_t t = options_.go_backwards ? time - 1 - s : s;
    const SymbolicTensor x_t = ops::reshape(ops::slice(x_proj, {t, 0, 0}, {1, -1, -1}), {-1, width});
    std::vector<SymbolicTensor> next = step(ctx, x_t, states, recurrent_masks);
    if (mask.defined()) {  // a masked row keeps its states: m next + (1 - m) before, m (batch, 1)
      const SymbolicTensor m = ops::slice(mask, {0, t}, {-1, 1});
      const SymbolicTensor not_m = ops::subtract(ops::ones_like(m), m);
      for (std::size_t i = 0; i < next.size(); ++i)
        next[i] = ops::add(ops::multiply(m, next[i]), ops::multiply(not_m, states[i]));
    }
    states = std::move(next);
    sequence.push_back(ops::reshape(states[0], {1, -1, units_}));
  }
  std::vector<SymbolicTensor> out{ops::concat(sequence, 0)};
  out.insert(out.end(), states.begin(), states.end());
  return out;
}

std::vector<SymbolicTensor> stateful_initial_states(CallContext& ctx, const Layer& layer,
                                                    std::vector<VariablePtr>& variables, int count,
                                                    const std::vector<std::int64_t>& state_dims, DType dtype) {
  if (variables.empty()) {
    const std::int64_t batch = layer.build_input_specs().empty() ? -1 : layer.build_input_specs()[0].shape.dim(0);
    if (batch <= 0)
      raise<ValueError>("{}: a stateful layer needs a fixed batch size, for its states (batch, {}); give the Input "
                        "one (Input(shape, {{.batch_size = ...}}), Keras's batch_shape)",
                        describe(layer), fmt::join(state_dims, ", "));
    std::vector<std::int64_t> dims{batch};
    dims.insert(dims.end(), state_dims.begin(), state_dims.end());
    for (int i = 0; i < count; ++i)
      variables.push_back(make_variable(fmt::format("{}/state_{}:0", layer.name(), i),
                                        Tensor::zeros(Shape(dims), dtype, default_device()), /*trainable=*/false));
  }
  if (ctx.replica)
    raise<ValueError>("{}: a stateful layer runs on one device; its states cannot be split between replicas",
                      describe(layer));
  std::vector<SymbolicTensor> initial;
  for (const auto& v : variables) initial.push_back(ctx.graph.variable(v));
  return initial;
}

std::vector<SymbolicTensor> Recurrent::stateful_initial(CallContext& ctx, const SymbolicTensor& x) {
  return stateful_initial_states(ctx, *this, *state_variables_, states_, {units_}, x.dtype());
}

std::vector<SymbolicTensor> Recurrent::compute_mask(const std::vector<SymbolicTensor>&,
                                                    const std::vector<SymbolicTensor>& masks) const {
  const SymbolicTensor mask = masks.empty() ? SymbolicTensor() : masks[0];
  return {options_.return_sequences ? mask : SymbolicTensor()};
}

void Recurrent::reset_states() {
  for (const auto& v : *state_variables_) v->assign(Tensor::zeros(v->shape(), v->dtype()));
}

std::vector<SymbolicTensor> Recurrent::call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) {
  const SymbolicTensor& x = inputs.at(0);  // (batch, time, features)
  const std::int64_t features = weight(weight_name("kernel"))->shape()[0], time = x.shape().dim(1);
  if (x.rank() != 3 || x.shape().dim(2) != features)
    raise<ShapeError>("{}: expected input (batch, time, {}), got {}", describe(*this), features, x.shape().to_string());
  const std::size_t given = inputs.size() - 1;
  if (given != 0 && given != static_cast<std::size_t>(states_))
    raise<ValueError>("{}: initial_state needs {} tensor{} of shape (batch, {}), got {}", describe(*this), states_,
                      states_ == 1 ? "" : "s (h, c)", units_, given);

  const SymbolicTensor x_proj = project(ctx, x);  // (time, batch, gates·units)
  std::vector<SymbolicTensor> initial;
  for (std::size_t i = 1; i < inputs.size(); ++i) {
    if (inputs[i].rank() != 2 || inputs[i].shape().dim(1) != units_)
      raise<ShapeError>("{}: initial state {} has shape {}, expected (batch, {})", describe(*this), i - 1,
                        inputs[i].shape().to_string(), units_);
    initial.push_back(inputs[i]);
  }
  if (initial.empty() && options_.stateful) initial = stateful_initial(ctx, x);
  if (initial.empty()) {  // zeros (batch, units), the batch taken from x_proj's first step
    const SymbolicTensor zeros =
        ops::zeros_like(ops::reshape(ops::slice(x_proj, {0, 0, 0}, {1, -1, units_}), {-1, units_}));
    initial.assign(static_cast<std::size_t>(states_), zeros);
  }

  SymbolicTensor mask = input_mask(ctx, 0);  // (batch, time) or undefined
  if (mask.defined() && mask.dtype() != x_proj.dtype()) mask = ops::cast(mask, x_proj.dtype());
  std::vector<SymbolicTensor> ran;  // {states (time, batch, units), final states...}
  if (ctx.training && options_.recurrent_dropout > 0.0) {
    // The steps are unrolled into the graph, one per time step.
    if (time < 0)
      raise<ShapeError>("{}: recurrent_dropout needs a known number of time steps in training (its steps are "
                        "unrolled), got input {}; give the Input its length (shape=(time, features)), or set "
                        "recurrent_dropout to 0",
                        describe(*this), x.shape().to_string());
    const auto masks = dropout_masks(ctx, ops::ones_like(initial[0]), options_.recurrent_dropout, gates_, gates_);
    ran = run_unrolled(ctx, x_proj, initial, masks, mask, time);
  } else {
    ran = run(ctx, x_proj, initial, mask);
  }
  if (mask.defined() && options_.return_sequences && options_.zero_output_for_mask) {
    // Zeros where masked, in step order (time reversed when going backwards): (time, batch, 1).
    SymbolicTensor steps = ops::transpose(mask, {1, 0});
    if (options_.go_backwards) steps = reverse_first_axis(steps);
    ran[0] = ops::multiply(ran[0], ops::reshape_like(steps, steps, 2, {1}));
  }
  if (options_.stateful && ctx.updates)
    for (std::size_t i = 0; i < state_variables_->size(); ++i)
      ctx.updates->push_back(ops::assign(ctx.graph.variable((*state_variables_)[i]), ran[i + 1]));

  std::vector<SymbolicTensor> outputs{options_.return_sequences ? ops::transpose(ran[0], {1, 0, 2}) : ran[1]};
  if (options_.return_state) outputs.insert(outputs.end(), ran.begin() + 1, ran.end());
  return outputs;
}

nlohmann::json Recurrent::get_config() const {
  nlohmann::json fields{{"return_sequences", options_.return_sequences},
                        {"return_state", options_.return_state},
                        {"go_backwards", options_.go_backwards},
                        {"stateful", options_.stateful},
                        {"unroll", options_.unroll},
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
                 {"kernel_constraint", options_.kernel_constraint.get_config()},
                 {"recurrent_constraint", options_.recurrent_constraint.get_config()},
                 {"bias_constraint", options_.bias_constraint.get_config()},
                 {"dropout", options_.dropout},
                 {"recurrent_dropout", options_.recurrent_dropout}});
  if (seed_given_) fields["seed"] = seed_;
  if (options_.zero_output_for_mask) fields["zero_output_for_mask"] = true;
  if (options_.recurrent_activation) fields["implementation"] = 2;
  if (options_.reset_after) fields["reset_after"] = *options_.reset_after;
  return layer_config(*this, fields);
}

RecurrentOptions Recurrent::options_from_config(const ConfigReader& r) {
  r.check_common();
  r.expect("time_major", false, "time-major inputs (transpose to (batch, time, features))");
  RecurrentOptions options{.activation = r.has("activation") ? r.activation("activation") : "tanh",
                           .use_bias = r.boolean("use_bias", true),
                           .kernel_initializer = r.initializer("kernel_initializer", "glorot_uniform"),
                           .recurrent_initializer = r.initializer("recurrent_initializer", "orthogonal"),
                           .bias_initializer = r.initializer("bias_initializer", "zeros"),
                           .kernel_regularizer = r.regularizer("kernel_regularizer"),
                           .recurrent_regularizer = r.regularizer("recurrent_regularizer"),
                           .bias_regularizer = r.regularizer("bias_regularizer"),
                           .kernel_constraint = r.constraint("kernel_constraint"),
                           .recurrent_constraint = r.constraint("recurrent_constraint"),
                           .bias_constraint = r.constraint("bias_constraint"),
                           .return_sequences = r.boolean("return_sequences", false),
                           .return_state = r.boolean("return_state", false),
                           .go_backwards = r.boolean("go_backwards", false),
                           .unroll = r.boolean("unroll", false),
                           .dropout = r.number("dropout", 0.0),
                           .recurrent_dropout = r.number("recurrent_dropout", 0.0),
                           .stateful = r.boolean("stateful", false),
                           .zero_output_for_mask = r.boolean("zero_output_for_mask", false),
                           .name = r.name()};
  if (r.has("seed")) options.seed = static_cast<std::uint64_t>(r.integer("seed"));
  return options;
}

}  // namespace tower::layers
