// Resizing.
#include "tower/layers/preprocessing/resizing.h"

#include "tower/core/error.h"
#include "tower/core/ops.h"
#include "tower/layers/layer_config.h"
#include "tower/layers/layer_utils.h"

namespace tower::layers {

SymbolicTensor resize_images(const Layer& layer, const SymbolicTensor& x, std::int64_t height, std::int64_t width,
                             const std::string& interpolation, bool crop_to_aspect_ratio, bool pad_to_aspect_ratio,
                             double fill_value) {
  expect_input_rank(layer, x.shape(), 4, "(batch, height, width, channels)");
  const std::int64_t h = x.shape().dim(1), w = x.shape().dim(2);
  if (h < 0 || w < 0)
    raise<ShapeError>("{}: needs a known height and width, got input {}; give the Input its size (or add a "
                      "Resizing layer first)",
                      describe(layer), x.shape().to_string());
  SymbolicTensor image = x;
  if (!is_floating(image.dtype())) image = ops::cast(image, DType::float32);
  if (crop_to_aspect_ratio) {
    // Keras's (TF backend) crop: sizes and offsets through float32 and truncation, at least 1 pixel.
    const auto crop_h = std::max<std::int64_t>(
        std::min<std::int64_t>(h, static_cast<std::int64_t>(static_cast<float>(w * height) / static_cast<float>(width))), 1);
    const auto crop_w = std::max<std::int64_t>(
        std::min<std::int64_t>(w, static_cast<std::int64_t>(static_cast<float>(h * width) / static_cast<float>(height))), 1);
    const auto top = static_cast<std::int64_t>(static_cast<float>(h - crop_h) / 2);
    const auto left = static_cast<std::int64_t>(static_cast<float>(w - crop_w) / 2);
    image = ops::slice(image, {0, top, left, 0}, {-1, crop_h, crop_w, -1});
  } else if (pad_to_aspect_ratio) {
    // Keras's (TF backend) padding: the padded size through float32 and truncation, then
    // (padded - size) / 2 rows (columns) of fill_value on *each* side, so an odd difference pads one
    // fewer than the padded size. At most one of the two is non-zero.
    const auto pad_h = std::max<std::int64_t>(h, static_cast<std::int64_t>(static_cast<float>(w * height) / static_cast<float>(width)));
    const auto pad_w = std::max<std::int64_t>(w, static_cast<std::int64_t>(static_cast<float>(h * width) / static_cast<float>(height)));
    const auto top = static_cast<std::int64_t>(static_cast<float>(pad_h - h) / 2);
    const auto left = static_cast<std::int64_t>(static_cast<float>(pad_w - w) / 2);
    if (top > 0 || left > 0) image = ops::pad(image, {0, 0, top, top, left, left, 0, 0}, fill_value);
  }
  if (image.shape().dim(1) == height && image.shape().dim(2) == width) return image;
  return ops::resize(image, height, width, interpolation);
}

Resizing::Resizing(std::int64_t height, std::int64_t width, const ResizingOptions& options)
    : Layer(options.name, "resizing"), height_(height), width_(width), options_(options) {
  if (height < 1 || width < 1)
    raise<ValueError>("{}: height and width must be positive, got ({}, {})", describe(*this), height, width);
  if (options.interpolation != "bilinear" && options.interpolation != "nearest")
    raise<ValueError>("{}: interpolation \"{}\" is not supported; tower resizes with \"bilinear\" or \"nearest\"",
                      describe(*this), options.interpolation);
  if (options.pad_to_aspect_ratio && options.crop_to_aspect_ratio)
    raise<ValueError>("{}: Only one of `pad_to_aspect_ratio` & `crop_to_aspect_ratio` can be `True`.", describe(*this));
  if (options.fill_mode != "constant")
    raise<ValueError>("{}: Invalid value for argument `fill_mode`. Only `'constant'` is supported. Received: "
                      "fill_mode={}",
                      describe(*this), options.fill_mode);
}

void Resizing::build(const std::vector<Shape>& input_shapes) {
  expect_input_rank(*this, input_shapes.at(0), 4, "(batch, height, width, channels)");
}

std::vector<SymbolicTensor> Resizing::call(CallContext&, const std::vector<SymbolicTensor>& inputs) {
  return {resize_images(*this, inputs.at(0), height_, width_, options_.interpolation, options_.crop_to_aspect_ratio,
                        options_.pad_to_aspect_ratio, options_.fill_value)};
}

nlohmann::json Resizing::get_config() const {
  return layer_config(*this, {{"height", height_},
                              {"width", width_},
                              {"interpolation", options_.interpolation},
                              {"crop_to_aspect_ratio", options_.crop_to_aspect_ratio},
                              {"pad_to_aspect_ratio", options_.pad_to_aspect_ratio},
                              {"fill_mode", options_.fill_mode},
                              {"fill_value", options_.fill_value},
                              {"antialias", false},
                              {"data_format", "channels_last"}});
}

LayerPtr Resizing::from_config(const nlohmann::json& config) {
  ConfigReader r(config, "Resizing");
  r.check_common();
  r.expect("antialias", false, "antialiased resizing");
  return r.finish(Resizing(r.integer("height"), r.integer("width"),
                           {.interpolation = r.string("interpolation", "bilinear"),
                            .crop_to_aspect_ratio = r.boolean("crop_to_aspect_ratio", false),
                            .pad_to_aspect_ratio = r.boolean("pad_to_aspect_ratio", false),
                            .fill_mode = r.string("fill_mode", "constant"),
                            .fill_value = r.number("fill_value", 0.0),
                            .name = r.name()}));
}

}  // namespace tower::layers
