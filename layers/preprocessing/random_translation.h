// RandomTranslation: in training, each image shifted by a random fraction of its size, as Keras 3's.
#pragma once

#include <vector>

#include "tower/layers/preprocessing/random_geometry.h"

namespace tower::layers {

// x: (batch, h, w, c) -> the same shape. Training: per image dy = u·h and dx = v·w with u uniform in
// the height factor's range and v in the width factor's; output pixel (x, y) reads (x - dx, y - dy)
// through ops::image_transform with fill_mode and interpolation. Inference: x unchanged. No weights.
class RandomTranslation : public Layer {
 public:
  // Each factor: one value f for (-|f|, |f|), or (lower, upper); values in [-1, 1] (fractions of the size).
  RandomTranslation(const std::vector<double>& height_factor, const std::vector<double>& width_factor,
                    const RandomGeometryOptions& options = {});

  void build(const std::vector<Shape>& input_shapes) override;
  std::vector<SymbolicTensor> call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) override;
  std::shared_ptr<Layer> share() const override { return std::make_shared<RandomTranslation>(*this); }
  nlohmann::json get_config() const override;
  static LayerPtr from_config(const nlohmann::json& config);
  std::string class_name() const override { return "RandomTranslation"; }

 private:
  std::vector<double> height_factor_, width_factor_;
  std::pair<double, double> height_range_, width_range_;
  RandomGeometryOptions options_;
  std::uint64_t seed_;
};

}  // namespace tower::layers
