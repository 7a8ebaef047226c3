// RandomRotation: in training, each image rotated about its centre by a random angle, as Keras 3's.
#pragma once

#include <vector>

#include "tower/layers/preprocessing/random_geometry.h"

namespace tower::layers {

// x: (batch, h, w, c) -> the same shape. Training: per image an angle uniform in [lower, upper] · 2π
// (factor in fractions of a full turn), the image rotated about ((w - 1) / 2, (h - 1) / 2) by
// ops::rotation_transform and ops::image_transform. Inference: x unchanged. No weights.
class RandomRotation : public Layer {
 public:
  // factor: one value f for (-|f|, |f|), or (lower, upper); in [-1, 1].
  explicit RandomRotation(const std::vector<double>& factor, const RandomGeometryOptions& options = {});

  void build(const std::vector<Shape>& input_shapes) override;
  std::vector<SymbolicTensor> call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) override;
  std::shared_ptr<Layer> share() const override { return std::make_shared<RandomRotation>(*this); }
  nlohmann::json get_config() const override;
  static LayerPtr from_config(const nlohmann::json& config);
  std::string class_name() const override { return "RandomRotation"; }

  std::pair<double, double> factor() const { return range_; }

 private:
  std::pair<double, double> range_;
  RandomGeometryOptions options_;
  std::uint64_t seed_;
};

}  // namespace tower::layers
