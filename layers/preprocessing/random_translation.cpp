// RandomTranslation.
#include "tower/layers/preprocessing/random_translation.h"

#include "tower/core/ops.h"
#include "tower/core/random.h"
#include "tower/layers/layer_utils.h"

namespace tower::layers {

RandomTranslation::RandomTranslation(const std::vector<double>& height_factor, const std::vector<double>& width_factor,
                                     const RandomGeometryOptions& options)
    : Layer(options.name, "random_translation"),
      height_factor_(height_factor),
      width_factor_(width_factor),
      options_(options),
      seed_(options.seed ? *options.seed : next_seed()) {
  height_range_ = geometry::factor_range(*this, height_factor, "height_factor", -1.0, true);
  width_range_ = geometry::factor_range(*this, width_factor, "width_factor", -1.0, true);
  geometry::check_modes(*this, options.fill_mode, options.interpolation);
}

void RandomTranslation::build(const std::vector<Shape>& input_shapes) {
  geometry::image_size(*this, input_shapes.at(0));
}

std::vector<SymbolicTensor> RandomTranslation::call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) {
  SymbolicTensor x = inputs.at(0);  // (batch, h, w, c)
  const auto [h, w] = geometry::image_size(*this, x.shape());
  if (!is_floating(x.dtype())) x = ops::cast(x, DType::float32);
  if (!ctx.training) return {x};
  const SymbolicTensor u = geometry::draw(ctx, x, seed_, 2);  // (batch, 2): height, width
  // The shifts (batch, 1) in pixels, and Keras's matrix [1, 0, -dx, 0, 1, -dy, 0, 0].
  const SymbolicTensor dy = geometry::column(u, 0, height_range_.first * h, height_range_.second * h);
  const SymbolicTensor dx = geometry::column(u, 1, width_range_.first * w, width_range_.second * w);
  const SymbolicTensor t =
      geometry::transforms(dx, {1.0, 0.0, ops::scale(dx, -1.0), 0.0, 1.0, ops::scale(dy, -1.0), 0.0, 0.0});
  return {ops::image_transform(x, t, h, w, options_.interpolation, options_.fill_mode, options_.fill_value)};
}

nlohmann::json RandomTranslation::get_config() const {
  nlohmann::json fields = geometry::options_json(options_, seed_, options_.seed.has_value());
  fields["height_factor"] = geometry::factor_json(height_factor_);
  fields["width_factor"] = geometry::factor_json(width_factor_);
  return layer_config(*this, fields);
}

LayerPtr RandomTranslation::from_config(const nlohmann::json& config) {
  ConfigReader r(config, "RandomTranslation");
  r.check_common();
  return r.finish(RandomTranslation(geometry::factor_from_config(r, "height_factor"),
                                    geometry::factor_from_config(r, "width_factor"), geometry::options_from_config(r)));
}

}  // namespace tower::layers
