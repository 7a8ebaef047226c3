// CenterCrop.
#include "tower/layers/preprocessing/center_crop.h"

#include "tower/core/error.h"
#include "tower/core/ops.h"
#include "tower/layers/layer_config.h"
#include "tower/layers/layer_utils.h"
#include "tower/layers/preprocessing/resizing.h"

namespace tower::layers {

CenterCrop::CenterCrop(std::int64_t height, std::int64_t width, const CenterCropOptions& options)
    : Layer(options.name, "center_crop"), height_(height), width_(width) {
  if (height < 1 || width < 1)
    raise<ValueError>("{}: height and width must be positive, got ({}, {})", describe(*this), height, width);
}

void CenterCrop::build(const std::vector<Shape>& input_shapes) {
  expect_input_rank(*this, input_shapes.at(0), 4, "(batch, height, width, channels)");
}

std::vector<SymbolicTensor> CenterCrop::call(CallContext&, const std::vector<SymbolicTensor>& inputs) {
  const SymbolicTensor& x = inputs.at(0);  // (batch, h, w, c)
  expect_input_rank(*this, x.shape(), 4, "(batch, height, width, channels)");
  const std::int64_t h = x.shape().dim(1), w = x.shape().dim(2);
  if (h >= height_ && w >= width_) {
    SymbolicTensor image = is_floating(x.dtype()) ? x : ops::cast(x, DType::float32);
    return {ops::slice(image, {0, (h - height_) / 2, (w - width_) / 2, 0}, {-1, height_, width_, -1})};
  }
  return {resize_images(*this, x, height_, width_, "bilinear", /*crop_to_aspect_ratio=*/true)};
}

nlohmann::json CenterCrop::get_config() const {
  return layer_config(*this, {{"height", height_}, {"width", width_}, {"data_format", "channels_last"}});
}

LayerPtr CenterCrop::from_config(const nlohmann::json& config) {
  ConfigReader r(config, "CenterCrop");
  r.check_common();
  return r.finish(CenterCrop(r.integer("height"), r.integer("width"), {.name = r.name()}));
}

}  // namespace tower::layers
