// RandomRotation.
#include "tower/layers/preprocessing/random_rotation.h"

#include <numbers>

#include "tower/core/error.h"
#include "tower/core/ops.h"
#include "tower/core/random.h"
#include "tower/layers/layer_utils.h"

namespace tower::layers {

RandomRotation::RandomRotation(const std::vector<double>& factor, const RandomGeometryOptions& options)
    : Layer(options.name, "random_rotation"), options_(options), seed_(options.seed ? *options.seed : next_seed()) {
  // Keras's base _set_factor: a pair is rejected only when it lies wholly outside [-1, 1].
  if (factor.size() == 2) {
    if (factor[0] > 1.0 || factor[1] < -1.0)
      raise<ValueError>("{}: factor ({}, {}) must lie in [-1, 1] (fractions of a full turn)", describe(*this),
                        factor[0], factor[1]);
    range_ = {std::min(factor[0], factor[1]), std::max(factor[0], factor[1])};
  } else {
    range_ = geometry::factor_range(*this, factor, "factor", -1.0, true);
  }
  geometry::check_modes(*this, options.fill_mode, options.interpolation);
}

void RandomRotation::build(const std::vector<Shape>& input_shapes) { geometry::image_size(*this, input_shapes.at(0)); }

std::vector<SymbolicTensor> RandomRotation::call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) {
  SymbolicTensor x = inputs.at(0);  // (batch, h, w, c)
  const auto [h, w] = geometry::image_size(*this, x.shape());
  if (!is_floating(x.dtype())) x = ops::cast(x, DType::float32);
  if (!ctx.training) return {x};
  // angle (batch, 1) in radians: Keras draws degrees in [lower, upper] · 360.
  const double to_radians = std::numbers::pi / 180.0;
  const SymbolicTensor angle = geometry::column(geometry::draw(ctx, x, seed_, 1), 0, range_.first * 360.0 * to_radians,
                                                range_.second * 360.0 * to_radians);
  return {ops::image_transform(x, ops::rotation_transform(angle, h, w), h, w, options_.interpolation,
                               options_.fill_mode, options_.fill_value)};
}

nlohmann::json RandomRotation::get_config() const {
  nlohmann::json fields = geometry::options_json(options_, seed_, options_.seed.has_value());
  fields["factor"] = {range_.first, range_.second};
  return layer_config(*this, fields);
}

LayerPtr RandomRotation::from_config(const nlohmann::json& config) {
  ConfigReader r(config, "RandomRotation");
  r.check_common();
  return r.finish(RandomRotation(geometry::factor_from_config(r, "factor"), geometry::options_from_config(r)));
}

}  // namespace tower::layers
