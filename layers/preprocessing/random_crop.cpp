// RandomCrop.
#include "tower/layers/preprocessing/random_crop.h"

#include <algorithm>

#include "tower/core/error.h"
#include "tower/core/ops.h"
#include "tower/core/random.h"
#include "tower/layers/layer_config.h"
#include "tower/layers/layer_utils.h"
#include "tower/layers/preprocessing/random_geometry.h"

namespace tower::layers {

RandomCrop::RandomCrop(std::int64_t height, std::int64_t width, const RandomCropOptions& options)
    : Layer(options.name, "random_crop"),
      height_(height),
      width_(width),
      // The config always holds the seed (as Keras's make_default_seed): a made one is kept below 2^31 so
      // that it reads back as the integer Keras writes.
      seed_(options.seed ? *options.seed : next_seed() % (std::uint64_t{1} << 31)) {
  if (height < 1 || width < 1)
    raise<ValueError>("{}: the crop size ({}, {}) must be positive", describe(*this), height, width);
}

void RandomCrop::build(const std::vector<Shape>& input_shapes) { geometry::image_size(*this, input_shapes.at(0)); }

std::vector<SymbolicTensor> RandomCrop::call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) {
  SymbolicTensor x = inputs.at(0);  // (batch, h, w, c)
  const auto [h, w] = geometry::image_size(*this, x.shape());
  if (!is_floating(x.dtype())) x = ops::cast(x, DType::float32);
  if (ctx.training && h > height_ && w > width_) {
    // One offset pair for the batch: row 0 of a per-image draw without the replica offset, which every
    // tower draws alike (what one device draws for the whole batch).
    const SymbolicTensor u = ops::random_uniform(x, 0.0, 1.0, seed_, SymbolicTensor(), {-1, 2});  // (batch, 2)
    const SymbolicTensor first = ops::broadcast_like(ops::slice(u, {0, 0}, {1, 2}), u);
    auto offset = [&](std::int64_t j, std::int64_t positions) {  // floor(u · positions), at most positions - 1
      const SymbolicTensor scaled = ops::scale(ops::slice(first, {0, j}, {-1, 1}), static_cast<double>(positions));
      const SymbolicTensor floored = ops::cast(ops::cast(scaled, DType::int32), x.dtype());
      return ops::minimum(floored, ops::fill_like(floored, static_cast<double>(positions - 1)));
    };
    const SymbolicTensor top = offset(0, h - height_ + 1), left = offset(1, w - width_ + 1);
    // Output (x, y) reads (x + left, y + top): integer shifts, so nearest sampling copies the pixels.
    const SymbolicTensor t = geometry::transforms(top, {1.0, 0.0, left, 0.0, 1.0, top, 0.0, 0.0});
    return {ops::image_transform(x, t, height_, width_, "nearest", "constant", 0.0)};
  }
  // Keras's centred offsets of the largest window with the target aspect ratio.
  const std::int64_t crop_h = std::max<std::int64_t>(
      std::min<std::int64_t>(h, static_cast<std::int64_t>(static_cast<double>(w * height_) / width_)), 1);
  const std::int64_t crop_w = std::max<std::int64_t>(
      std::min<std::int64_t>(w, static_cast<std::int64_t>(static_cast<double>(h * width_) / height_)), 1);
  const auto top = static_cast<std::int64_t>(static_cast<double>(h - crop_h) / 2);
  const auto left = static_cast<std::int64_t>(static_cast<double>(w - crop_w) / 2);
  // Training (the image is not larger than the crop): Keras slices height x width rows and columns from
  // there (clipped to the image); inference: the aspect-ratio window itself.
  const std::int64_t rows = ctx.training ? std::min(height_, h - top) : crop_h;
  const std::int64_t cols = ctx.training ? std::min(width_, w - left) : crop_w;
  SymbolicTensor y = ops::slice(x, {0, top, left, 0}, {-1, rows, cols, -1});
  if (rows != height_ || cols != width_) y = ops::resize(y, height_, width_, "bilinear");
  return {y};
}

nlohmann::json RandomCrop::get_config() const {
  return layer_config(*this,
                      {{"height", height_}, {"width", width_}, {"seed", seed_}, {"data_format", "channels_last"}});
}

LayerPtr RandomCrop::from_config(const nlohmann::json& config) {
  ConfigReader r(config, "RandomCrop");
  r.check_common();
  RandomCropOptions options{.name = r.name()};
  if (r.has("seed")) options.seed = static_cast<std::uint64_t>(r.integer("seed"));
  return r.finish(RandomCrop(r.integer("height"), r.integer("width"), options));
}

}  // namespace tower::layers
