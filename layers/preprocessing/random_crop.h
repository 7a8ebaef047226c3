// RandomCrop: in training, one random (height, width) window of the batch's images, as Keras 3's.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "tower/layers/layer.h"

namespace tower::layers {

struct RandomCropOptions {
  std::optional<std::uint64_t> seed;  // unset: one from tower::next_seed(), written to the config as Keras does
  std::string name;
};

// x: (batch, h, w, c) -> (batch, height, width, c). Training with h > height and w > width: one window
// for the whole batch (Keras 3 draws one offset per call), top row floor(u (h - height + 1)), left column
// floor(v (w - width + 1)). Training otherwise: Keras's fallback, the window [top, top + height) x
// [left, left + width) from the centred offsets of the largest crop with the target aspect ratio, clipped
// to the image and resized (bilinear) to (height, width). Inference: that centred aspect-ratio crop
// resized to (height, width) (Keras 3's documented behaviour; Keras 3.15 itself returns x unchanged,
// which changes the output shape between training and inference). No weights.
class RandomCrop : public Layer {
 public:
  RandomCrop(std::int64_t height, std::int64_t width, const RandomCropOptions& options = {});

  void build(const std::vector<Shape>& input_shapes) override;
  std::vector<SymbolicTensor> call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) override;
  std::shared_ptr<Layer> share() const override { return std::make_shared<RandomCrop>(*this); }
  nlohmann::json get_config() const override;
  static LayerPtr from_config(const nlohmann::json& config);
  std::string class_name() const override { return "RandomCrop"; }

 private:
  std::int64_t height_, width_;
  std::uint64_t seed_;
};

}  // namespace tower::layers
