// RandomZoom: in training, each image zoomed in or out about its centre by a random factor, as Keras 3's.
#pragma once

#include <optional>
#include <vector>

#include "tower/layers/preprocessing/random_geometry.h"

namespace tower::layers {

// x: (batch, h, w, c) -> the same shape. Training: per image zooms zy = 1 + u (u in the height factor's
// range) and zx = 1 + v (v in the width factor's, or zx = zy without one); output pixel (x, y) reads
// (zx x + (w - 1)/2 (1 - zx), zy y + (h - 1)/2 (1 - zy)) through ops::image_transform: a positive factor
// zooms out, a negative one in. Inference: x unchanged. No weights.
class RandomZoom : public Layer {
 public:
  // Each factor: one value f for (-|f|, |f|), or (lower, upper); values in (-1, 1].
  explicit RandomZoom(const std::vector<double>& height_factor,
                      const std::optional<std::vector<double>>& width_factor = std::nullopt,
                      const RandomGeometryOptions& options = {});

  void build(const std::vector<Shape>& input_shapes) override;
  std::vector<SymbolicTensor> call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) override;
  std::shared_ptr<Layer> share() const override { return std::make_shared<RandomZoom>(*this); }
  nlohmann::json get_config() const override;
  static LayerPtr from_config(const nlohmann::json& config);
  std::string class_name() const override { return "RandomZoom"; }

 private:
  std::vector<double> height_factor_;
  std::optional<std::vector<double>> width_factor_;
  std::pair<double, double> height_range_, width_range_;
  RandomGeometryOptions options_;
  std::uint64_t seed_;
};

}  // namespace tower::layers
