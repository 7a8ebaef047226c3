// BatchNormalization.
#include "tower/layers/normalization/batch_normalization.h"

#include "tower/core/error.h"
#include "tower/core/ops.h"
#include "tower/layers/layer_config.h"
#include "tower/layers/layer_utils.h"

namespace tower::layers {

BatchNormalization::BatchNormalization(const BatchNormalizationOptions& options)
    : Layer(options.name, "batch_normalization"), options_(options) {
  if (!(options.momentum >= 0.0 && options.momentum <= 1.0))
    raise<ValueError>("{}: momentum must be in [0, 1], got {}", describe(*this), options.momentum);
  if (!(options.epsilon > 0.0))
    raise<ValueError>("{}: epsilon must be positive, got {}", describe(*this), options.epsilon);
}

int BatchNormalization::channel_axis(const Shape& shape) const {
  if (shape.rank() < 2)
    raise<ShapeError>("{}: expected an input of shape (batch, ..., channels), got {}", describe(*this),
                      shape.to_string());
  const int axis = options_.axis < 0 ? shape.rank() + options_.axis : options_.axis;
  if (axis < 1 || axis >= shape.rank())
    raise<ValueError>("{}: axis={} is not a feature axis of input {} (the batch axis 0 cannot be normalized)",
                      describe(*this), options_.axis, shape.to_string());
  return axis;
}

namespace {
// The permutations that move `axis` last, and the last axis back to `axis`.
std::vector<std::int64_t> axis_to_last(int rank, int axis) {
  std::vector<std::int64_t> perm;
  for (int a = 0; a < rank; ++a)
    if (a != axis) perm.push_back(a);
  perm.push_back(axis);
  return perm;
}
std::vector<std::int64_t> last_to_axis(int rank, int axis) {
  std::vector<std::int64_t> perm;
  for (int a = 0; a < rank; ++a) perm.push_back(a < axis ? a : a == axis ? rank - 1 : a - 1);
  return perm;
}
}  // namespace

void BatchNormalization::build(const std::vector<Shape>& input_shapes) {
  const Shape& in = input_shapes.at(0);
  const int axis = channel_axis(in);
  expect_known_dim(*this, in, axis, "channels (the normalized axis)");
  const Shape c{in.dim(axis)};
  if (options_.scale)
    set_constraint(add_weight("gamma", c, options_.gamma_initializer, options_.gamma_regularizer),
                   options_.gamma_constraint);
  if (options_.center)
    set_constraint(add_weight("beta", c, options_.beta_initializer, options_.beta_regularizer),
                   options_.beta_constraint);
  add_weight("moving_mean", c, options_.moving_mean_initializer, {}, /*trainable=*/false);
  add_weight("moving_variance", c, options_.moving_variance_initializer, {}, /*trainable=*/false);
}

std::vector<SymbolicTensor> BatchNormalization::call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) {
  const int axis = channel_axis(inputs.at(0).shape()), rank = inputs.at(0).rank();
  if (axis == rank - 1) return {normalize(ctx, inputs.at(0))};
  // Another axis (axis=1 of channels_first images): the kernels normalize the last axis, so move it there
  // and back.
  const SymbolicTensor y = normalize(ctx, ops::transpose(inputs.at(0), axis_to_last(rank, axis)));
  return {ops::transpose(y, last_to_axis(rank, axis))};
}

SymbolicTensor BatchNormalization::normalize(CallContext& ctx, const SymbolicTensor& input) {  // (batch, ..., c)
  // As Keras 3 under a mixed policy: a half input is normalized in float32 with the float32 weights and
  // statistics (which are not autocast), and the output is cast back to the compute dtype.
  if (is_half(input.dtype())) return ops::cast(normalize(ctx, ops::cast(input, DType::float32)), input.dtype());
  const SymbolicTensor& x = input;
  const VariablePtr gamma_weight = weight("gamma"), beta_weight = weight("beta");  // each (c,)
  const VariablePtr moving_mean_weight = weight("moving_mean"), moving_variance_weight = weight("moving_variance");
  const Shape& c = moving_mean_weight->shape();
  if (x.shape().dim(-1) != c[0])
    raise<ShapeError>("{}: expected input with {} channels (axis {}), got {}", describe(*this), c[0], options_.axis,
                      x.shape().to_string());
  // Without scale or center, gamma is 1 and beta 0.
  auto gamma = gamma_weight ? read(ctx, gamma_weight, false) : ctx.graph.constant(Tensor::full(c, 1.0, x.dtype()));
  auto beta = beta_weight ? read(ctx, beta_weight, false) : ctx.graph.constant(Tensor::zeros(c, x.dtype()));
  auto moving_mean = read(ctx, moving_mean_weight, false), moving_variance = read(ctx, moving_variance_weight, false);

  // As Keras 3: a frozen layer (trainable = false) normalizes with the moving statistics even in training.
  if (!ctx.training || !trainable())
    return ops::batch_norm_inference(x, gamma, beta, moving_mean, moving_variance, options_.epsilon);

  auto r = ops::batch_norm_training(x, gamma, beta, options_.epsilon);  // {y, mean (c,), variance (c,), inv_std}
  if (ctx.updates) {
    const double m = options_.momentum;
    auto blend = [&](const SymbolicTensor& moving, const SymbolicTensor& batch) {
      return ops::add(ops::scale(moving, m), ops::scale(ops::stop_gradient(batch), 1.0 - m));
    };
    ctx.updates->push_back(ops::assign(moving_mean, blend(moving_mean, r[1])));
    ctx.updates->push_back(ops::assign(moving_variance, blend(moving_variance, r[2])));
  }
  return r[0];
}

nlohmann::json BatchNormalization::get_config() const {
  // tf.keras writes the axis as a list, made non-negative once the layer is built.
  nlohmann::json axis = options_.axis;
  if (built() && !build_input_specs().empty()) axis = nlohmann::json::array({channel_axis(build_input_specs()[0].shape)});
  else if (options_.axis >= 0) axis = nlohmann::json::array({options_.axis});
  return layer_config(*this, {{"axis", axis},
                              {"momentum", options_.momentum},
                              {"epsilon", options_.epsilon},
                              {"center", options_.center},
                              {"scale", options_.scale},
                              {"beta_initializer", options_.beta_initializer.get_config()},
                              {"gamma_initializer", options_.gamma_initializer.get_config()},
                              {"moving_mean_initializer", options_.moving_mean_initializer.get_config()},
                              {"moving_variance_initializer", options_.moving_variance_initializer.get_config()},
                              {"beta_regularizer", options_.beta_regularizer.get_config()},
                              {"gamma_regularizer", options_.gamma_regularizer.get_config()},
                              {"beta_constraint", options_.beta_constraint.get_config()},
                              {"gamma_constraint", options_.gamma_constraint.get_config()}});
}

LayerPtr BatchNormalization::from_config(const nlohmann::json& config) {
  ConfigReader r(config, "BatchNormalization");
  r.check_common();
  r.expect("renorm", false, "batch renormalization");
  r.expect("virtual_batch_size", nullptr, "ghost batch normalization");
  r.expect("adjustment", nullptr, "adjustment functions");
  r.expect("mode", 0, "Keras 1's feature-wise modes other than 0");
  std::vector<std::int64_t> axes = r.ints("axis", {-1});
  if (axes.size() != 1) r.fail("field \"axis\" must name one axis (the channels); got several");
  BatchNormalizationOptions options{.axis = r.axis(axes[0], "axis"),
                                    .momentum = r.number("momentum", 0.99),
                                    .epsilon = r.number("epsilon", 1e-3),
                                    .center = r.boolean("center", true),
                                    .scale = r.boolean("scale", true),
                                    .beta_initializer = r.initializer("beta_initializer", "zeros"),
                                    .gamma_initializer = r.initializer("gamma_initializer", "ones"),
                                    .moving_mean_initializer = r.initializer("moving_mean_initializer", "zeros"),
                                    .moving_variance_initializer = r.initializer("moving_variance_initializer", "ones"),
                                    .beta_regularizer = r.regularizer("beta_regularizer"),
                                    .gamma_regularizer = r.regularizer("gamma_regularizer"),
                                    .beta_constraint = r.constraint("beta_constraint"),
                                    .gamma_constraint = r.constraint("gamma_constraint"),
                                    .name = r.name()};
  return r.finish(BatchNormalization(options));
}

}  // namespace tower::layers
