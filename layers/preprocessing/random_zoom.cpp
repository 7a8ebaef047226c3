// RandomZoom.
#include "tower/layers/preprocessing/random_zoom.h"

#include "tower/core/ops.h"
#include "tower/core/random.h"
#include "tower/layers/layer_utils.h"

namespace tower::layers {

RandomZoom::RandomZoom(const std::vector<double>& height_factor, const std::optional<std::vector<double>>& width_factor,
                       const RandomGeometryOptions& options)
    : Layer(options.name, "random_zoom"),
      height_factor_(height_factor),
      width_factor_(width_factor),
      options_(options),
      seed_(options.seed ? *options.seed : next_seed()) {
  height_range_ = geometry::factor_range(*this, height_factor, "height_factor", -1.0, false);
  if (width_factor) width_range_ = geometry::factor_range(*this, *width_factor, "width_factor", -1.0, false);
  geometry::check_modes(*this, options.fill_mode, options.interpolation);
}

void RandomZoom::build(const std::vector<Shape>& input_shapes) { geometry::image_size(*this, input_shapes.at(0)); }

std::vector<SymbolicTensor> RandomZoom::call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) {
  SymbolicTensor x = inputs.at(0);  // (batch, h, w, c)
  const auto [h, w] = geometry::image_size(*this, x.shape());
  if (!is_floating(x.dtype())) x = ops::cast(x, DType::float32);
  if (!ctx.training) return {x};
  const SymbolicTensor u = geometry::draw(ctx, x, seed_, 2);  // (batch, 2): height, width
  const SymbolicTensor zy = geometry::column(u, 0, 1.0 + height_range_.first, 1.0 + height_range_.second);
  const SymbolicTensor zx =
      width_factor_ ? geometry::column(u, 1, 1.0 + width_range_.first, 1.0 + width_range_.second) : zy;
  // Keras's _get_zoom_matrix: offsets (size - 1) / 2 · (1 - zoom) keep the centre in place.
  auto offset = [](const SymbolicTensor& zoom, std::int64_t size) {
    const double half = (static_cast<double>(size) - 1.0) / 2.0;
    return ops::add(ops::scale(zoom, -half), ops::fill_like(zoom, half));
  };
  const SymbolicTensor t = geometry::transforms(zx, {zx, 0.0, offset(zx, w), 0.0, zy, offset(zy, h), 0.0, 0.0});
  return {ops::image_transform(x, t, h, w, options_.interpolation, options_.fill_mode, options_.fill_value)};
}

nlohmann::json RandomZoom::get_config() const {
  nlohmann::json fields = geometry::options_json(options_, seed_, options_.seed.has_value());
  fields["height_factor"] = geometry::factor_json(height_factor_);
  fields["width_factor"] = width_factor_ ? geometry::factor_json(*width_factor_) : nlohmann::json(nullptr);
  return layer_config(*this, fields);
}

LayerPtr RandomZoom::from_config(const nlohmann::json& config) {
  ConfigReader r(config, "RandomZoom");
  r.check_common();
  std::optional<std::vector<double>> width;
  if (r.has("width_factor")) width = geometry::factor_from_config(r, "width_factor");
  return r.finish(
      RandomZoom(geometry::factor_from_config(r, "height_factor"), width, geometry::options_from_config(r)));
}

}  // namespace tower::layers
