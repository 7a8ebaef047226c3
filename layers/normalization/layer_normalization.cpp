// LayerNormalization.
#include "tower/layers/normalization/layer_normalization.h"

#include <algorithm>

#include "tower/core/error.h"
#include "tower/core/ops.h"
#include "tower/layers/layer_config.h"
#include "tower/layers/layer_utils.h"

namespace tower::layers {

LayerNormalization::LayerNormalization(const LayerNormalizationOptions& options)
    : Layer(options.name, "layer_normalization"), options_(options) {
  if (options.axis.empty()) raise<ValueError>("{}: axis must name at least one axis", describe(*this));
  if (!(options.epsilon > 0.0))
    raise<ValueError>("{}: epsilon must be positive, got {}", describe(*this), options.epsilon);
}

std::vector<int> LayerNormalization::axes_for(const Shape& shape) const {
  std::vector<int> axes;
  for (int a : options_.axis) {
    const int axis = a < 0 ? a + shape.rank() : a;
    if (axis < 0 || axis >= shape.rank())
      raise<ValueError>("{}: axis {} is out of range for an input of shape {}", describe(*this), a, shape.to_string());
    if (axis == 0)
      raise<ValueError>("{}: axis {} is the batch axis of input {}; normalize over axes after the batch",
                        describe(*this), a, shape.to_string());
    if (std::find(axes.begin(), axes.end(), axis) != axes.end())
      raise<ValueError>("{}: axis {} is given twice", describe(*this), a);
    axes.push_back(axis);
  }
  std::sort(axes.begin(), axes.end());
  return axes;
}

void LayerNormalization::build(const std::vector<Shape>& input_shapes) {
  const Shape& in = input_shapes.at(0);
  std::vector<std::int64_t> dims;  // the normalized axes' sizes: gamma's and beta's shape
  for (int axis : axes_for(in)) {
    expect_known_dim(*this, in, axis, "normalized axis");
    dims.push_back(in[axis]);
  }
  if (options_.scale)
    set_constraint(add_weight("gamma", Shape(dims), options_.gamma_initializer, options_.gamma_regularizer),
                   options_.gamma_constraint);
  if (options_.center)
    set_constraint(add_weight("beta", Shape(dims), options_.beta_initializer, options_.beta_regularizer),
                   options_.beta_constraint);
}

std::vector<SymbolicTensor> LayerNormalization::call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) {
  const SymbolicTensor& x = inputs.at(0);  // (batch, ...)
  const std::vector<int> axes = axes_for(x.shape());
  ops::Ints reduce_axes(axes.begin(), axes.end());
  // gamma and beta broadcast as (1, ..., d_axis, ..., 1) unless the axes are the trailing ones.
  std::vector<std::int64_t> broadcast(static_cast<std::size_t>(x.rank()), 1);
  std::vector<std::int64_t> weight_dims;
  for (int axis : axes) {
    broadcast[static_cast<std::size_t>(axis)] = x.shape()[axis];
    weight_dims.push_back(x.shape()[axis]);
  }
  auto param = [&](const char* name) -> SymbolicTensor {
    const VariablePtr w = weight(name);
    if (!w) return {};
    if (w->shape() != Shape(weight_dims))
      raise<ShapeError>("{}: built for normalized sizes {}, called on input {}", describe(*this),
                        w->shape().to_string(), x.shape().to_string());
    SymbolicTensor v = read(ctx, w);
    const bool trailing = axes.back() == x.rank() - 1 && axes.front() == x.rank() - static_cast<int>(axes.size());
    return trailing ? v : ops::reshape(v, broadcast);
  };
  const SymbolicTensor gamma = param("gamma"), beta = param("beta");

  // Over the last axis alone (Keras's default): one fused op, its missing weights as constants.
  if (axes.size() == 1 && axes[0] == x.rank() - 1) {
    const auto filled = [&](const SymbolicTensor& w, double value) {
      return w.defined() ? w
                         : ctx.graph.constant(Tensor::full(Shape{x.shape()[axes[0]]}, value, x.dtype()));
    };
    return {ops::layer_norm(x, filled(gamma, 1.0), filled(beta, 0.0), options_.epsilon)};
  }
  // Keras: mean, variance = moments(x); inv = rsqrt(variance + epsilon) * gamma;
  // y = x * inv + (beta - mean * inv).
  const SymbolicTensor mean = ops::reduce_mean(x, reduce_axes, true);
  const SymbolicTensor variance = ops::reduce_mean(ops::square(ops::subtract(x, mean)), reduce_axes, true);
  const SymbolicTensor eps = ctx.graph.constant(Tensor::scalar(options_.epsilon, x.dtype()));
  const SymbolicTensor one = ctx.graph.constant(Tensor::scalar(1.0, x.dtype()));
  SymbolicTensor inv = ops::divide(one, ops::sqrt(ops::add(variance, eps)));
  if (gamma.defined()) inv = ops::multiply(inv, gamma);
  SymbolicTensor res = ops::negative(ops::multiply(mean, inv));
  if (beta.defined()) res = ops::add(res, beta);
  return {ops::add(ops::multiply(x, inv), res)};
}

nlohmann::json LayerNormalization::get_config() const {
  // tf.keras writes the axis as given until built, then as the list of non-negative axes.
  nlohmann::json axis;
  if (built() && !build_input_specs().empty()) {
    axis = nlohmann::json::array();
    for (int a : axes_for(build_input_specs()[0].shape)) axis.push_back(a);
  } else if (options_.axis.size() == 1 && options_.axis[0] < 0) {
    axis = options_.axis[0];
  } else {  // a non-negative axis as the list a built layer writes, so that configs round-trip
    axis = options_.axis;
  }
  return layer_config(*this, {{"axis", axis},
                              {"epsilon", options_.epsilon},
                              {"center", options_.center},
                              {"scale", options_.scale},
                              {"beta_initializer", options_.beta_initializer.get_config()},
                              {"gamma_initializer", options_.gamma_initializer.get_config()},
                              {"beta_regularizer", options_.beta_regularizer.get_config()},
                              {"gamma_regularizer", options_.gamma_regularizer.get_config()},
                              {"beta_constraint", options_.beta_constraint.get_config()},
                              {"gamma_constraint", options_.gamma_constraint.get_config()}});
}

LayerPtr LayerNormalization::from_config(const nlohmann::json& config) {
  ConfigReader r(config, "LayerNormalization");
  r.check_common();
  r.expect("rms_scaling", false, "rms_scaling (deprecated in Keras 3; use RMSNormalization)");
  LayerNormalizationOptions options{.epsilon = r.number("epsilon", 1e-3),
                                    .center = r.boolean("center", true),
                                    .scale = r.boolean("scale", true),
                                    .beta_initializer = r.initializer("beta_initializer", "zeros"),
                                    .gamma_initializer = r.initializer("gamma_initializer", "ones"),
                                    .beta_regularizer = r.regularizer("beta_regularizer"),
                                    .gamma_regularizer = r.regularizer("gamma_regularizer"),
                                    .beta_constraint = r.constraint("beta_constraint"),
                                    .gamma_constraint = r.constraint("gamma_constraint"),
                                    .name = r.name()};
  options.axis.clear();
  for (std::int64_t a : r.ints("axis", {-1})) options.axis.push_back(r.axis(a, "axis"));
  return r.finish(LayerNormalization(options));
}

}  // namespace tower::layers
