// UpSampling2D.
#include "tower/layers/reshaping/up_sampling2d.h"

#include "tower/core/error.h"
#include "tower/core/ops.h"
#include "tower/layers/layer_config.h"
#include "tower/layers/layer_utils.h"

namespace tower::layers {

UpSampling2D::UpSampling2D(const std::vector<std::int64_t>& size, const UpSampling2DOptions& options)
    : Layer(options.name, "up_sampling2d"), interpolation_(options.interpolation) {
  set_data_format(options.data_format);
  size_ = normalize_tuple(*this, "size", size, 2);
  if (interpolation_ != "nearest" && interpolation_ != "bilinear")
    raise<ValueError>("{}: interpolation must be \"nearest\" or \"bilinear\", got \"{}\"", describe(*this),
                      interpolation_);
}

void UpSampling2D::build(const std::vector<Shape>& input_shapes) {
  expect_input_rank(*this, input_shapes.at(0), 4, "(batch, height, width, channels)");
}

std::vector<SymbolicTensor> UpSampling2D::call(CallContext&, const std::vector<SymbolicTensor>& inputs) {
  const SymbolicTensor& x = inputs.at(0);  // (batch, h, w, c)
  expect_input_rank(*this, x.shape(), 4, "(batch, height, width, channels)");
  const std::int64_t h = x.shape().dim(1), w = x.shape().dim(2);
  if (h < 0 || w < 0)
    raise<ShapeError>("{}: needs a known height and width, got input {}; give the Input its size", describe(*this),
                      x.shape().to_string());
  // Nearest sampling at an integer scale repeats each pixel size_h x size_w times, as Keras's repeat.
  return {ops::resize(x, h * size_[0], w * size_[1], interpolation_)};  // (batch, h·size_h, w·size_w, c)
}

nlohmann::json UpSampling2D::get_config() const {
  return layer_config(*this, {{"size", ints_to_json(size_)},
                              {"data_format", data_format()},
                              {"interpolation", interpolation_}});
}

LayerPtr UpSampling2D::from_config(const nlohmann::json& config) {
  ConfigReader r(config, "UpSampling2D");
  r.check_common();
  return r.finish(
      UpSampling2D(r.ints("size", {2, 2}), {.interpolation = r.string("interpolation", "nearest"), .data_format = r.data_format(), .name = r.name()}));
}

}  // namespace tower::layers
