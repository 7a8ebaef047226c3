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

void BatchNormalization::check_axis(const Shape& shape) const {
  if (shape.rank() < 2)
    raise<ShapeError>("{}: expected an input of shape (batch, ..., channels), got {}", describe(*this),
                      shape.to_string());
  if (options_.axis != -1 && options_.axis != shape.rank() - 1)
    raise<ValueError>(
        "{}: only the last axis (axis=-1, channels_last) is supported, got axis={} for input {}; "
        "move the normalized axis last (e.g. with a Reshape)",
        describe(*this), options_.axis, shape.to_string());
}

void BatchNormalization::build(const std::vector<Shape>& input_shapes) {
  const Shape& in = input_shapes.at(0);
  check_axis(in);
  expect_known_dim(*this, in, -1, "channels (last)");
  const Shape c{in.dim(-1)};
  if (options_.scale) add_weight("gamma", c, options_.gamma_initializer, options_.gamma_regularizer);
  if (options_.center) add_weight("beta", c, options_.beta_initializer, options_.beta_regularizer);
  add_weight("moving_mean", c, options_.moving_mean_initializer, {}, /*trainable=*/false);
  add_weight("moving_variance", c, options_.moving_variance_initializer, {}, /*trainable=*/false);
}

std::vector<SymbolicTensor> BatchNormalization::call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) {
  const SymbolicTensor& x = inputs.at(0);  // (batch, ..., c)
  check_axis(x.shape());
  const VariablePtr gamma_weight = weight("gamma"), beta_weight = weight("beta");  // each (c,)
  const VariablePtr moving_mean_weight = weight("moving_mean"), moving_variance_weight = weight("moving_variance");
  const Shape& c = moving_mean_weight->shape();
  if (x.shape().dim(-1) != c[0])
    raise<ShapeError>("{}: expected input with {} channels (its last axis), got {}", describe(*this), c[0],
                      x.shape().to_string());
  // Without scale or center, gamma is 1 and beta 0.
  auto gamma = gamma_weight ? read(ctx, gamma_weight) : ctx.graph.constant(Tensor::full(c, 1.0, x.dtype()));
  auto beta = beta_weight ? read(ctx, beta_weight) : ctx.graph.constant(Tensor::zeros(c, x.dtype()));
  auto moving_mean = read(ctx, moving_mean_weight), moving_variance = read(ctx, moving_variance_weight);

  // As Keras 3: a frozen layer (trainable = false) normalizes with the moving statistics even in training.
  if (!ctx.training || !trainable())
    return {ops::batch_norm_inference(x, gamma, beta, moving_mean, moving_variance, options_.epsilon)};

  auto r = ops::batch_norm_training(x, gamma, beta, options_.epsilon);  // {y, mean (c,), variance (c,), inv_std}
  if (ctx.updates) {
    const double m = options_.momentum;
    auto blend = [&](const SymbolicTensor& moving, const SymbolicTensor& batch) {
      return ops::add(ops::scale(moving, m), ops::scale(ops::stop_gradient(batch), 1.0 - m));
    };
    ctx.updates->push_back(ops::assign(moving_mean, blend(moving_mean, r[1])));
    ctx.updates->push_back(ops::assign(moving_variance, blend(moving_variance, r[2])));
  }
  return {r[0]};
}

nlohmann::json BatchNormalization::get_config() const {
  // tf.keras writes the axis as a list, made non-negative once the layer is built.
  nlohmann::json axis = options_.axis;
  if (built() && !build_input_specs().empty()) axis = nlohmann::json::array({build_input_specs()[0].shape.rank() - 1});
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
                              {"beta_constraint", nullptr},
                              {"gamma_constraint", nullptr}});
}

LayerPtr BatchNormalization::from_config(const nlohmann::json& config) {
  ConfigReader r(config, "BatchNormalization");
  r.check_common();
  r.expect("renorm", false, "batch renormalization");
  r.expect("virtual_batch_size", nullptr, "ghost batch normalization");
  r.expect("adjustment", nullptr, "adjustment functions");
  r.expect("mode", 0, "Keras 1's feature-wise modes other than 0");
  std::vector<std::int64_t> axes = r.ints("axis", {-1});
  if (axes.size() != 1) r.fail("field \"axis\" must name one axis (the channels, last); got several");
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
                                    .name = r.name()};
  return r.finish(BatchNormalization(options));
}

}  // namespace tower::layers
