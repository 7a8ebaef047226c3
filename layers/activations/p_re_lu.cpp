// PReLU.
#include "tower/layers/activations/p_re_lu.h"

#include "tower/core/error.h"
#include "tower/core/ops.h"
#include "tower/layers/layer_config.h"
#include "tower/layers/layer_utils.h"

namespace tower::layers {

PReLU::PReLU(const PReLUOptions& options) : Layer(options.name, "p_re_lu"), options_(options) {
  for (auto a : options_.shared_axes)
    if (a < 1)
      raise<ValueError>("{}: shared_axes counts from 1 (axis 0 is the batch), got {}", describe(*this), a);
}

void PReLU::build(const std::vector<Shape>& input_shapes) {
  const Shape& in = input_shapes.at(0);  // (batch, ...)
  auto dims = in.dims();
  dims.erase(dims.begin());  // alpha: (...), the shape of one sample
  for (auto a : options_.shared_axes) {
    if (a > static_cast<std::int64_t>(dims.size()))
      raise<ValueError>("{}: shared axis {} is out of range for input {}", describe(*this), a, in.to_string());
    dims[static_cast<std::size_t>(a - 1)] = 1;
  }
  for (auto d : dims)
    if (d <= 0)
      raise<ShapeError>("{}: expected input with known dimensions after the batch (except shared axes), got {}",
                        describe(*this), in.to_string());
  auto alpha = add_weight("alpha", Shape(dims), options_.alpha_initializer, options_.alpha_regularizer);
  set_constraint(alpha, options_.alpha_constraint);
}

std::vector<SymbolicTensor> PReLU::call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) {
  const SymbolicTensor& x = inputs.at(0);                  // (batch, ...)
  const SymbolicTensor alpha = read(ctx, weight("alpha"));  // (...), broadcast over the batch and shared axes
  // Keras: relu(x) - alpha * relu(-x).
  return {ops::subtract(ops::relu(x), ops::multiply(alpha, ops::relu(ops::negative(x))))};
}

nlohmann::json PReLU::get_config() const {
  const auto& axes = options_.shared_axes;
  return layer_config(*this, {{"alpha_initializer", options_.alpha_initializer.get_config()},
                              {"alpha_regularizer", options_.alpha_regularizer.get_config()},
                              {"alpha_constraint", options_.alpha_constraint.get_config()},
                              {"shared_axes", axes.empty() ? nlohmann::json(nullptr) : nlohmann::json(axes)}});
}

LayerPtr PReLU::from_config(const nlohmann::json& config) {
  nlohmann::json rest = config;
  Constraint alpha_constraint = take_constraint(rest, "alpha_constraint", "PReLU");
  ConfigReader r(rest, "PReLU");
  r.check_common();  // dtype float32, no other constraints, ...
  return r.finish(PReLU({.alpha_initializer = r.initializer("alpha_initializer", "zeros"),
                         .alpha_regularizer = r.regularizer("alpha_regularizer"),
                         .alpha_constraint = alpha_constraint,
                         .shared_axes = r.ints("shared_axes", {}),
                         .name = r.name()}));
}

}  // namespace tower::layers
