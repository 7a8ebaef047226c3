// RandomContrast: in training, each image's contrast scaled by a random factor, as Keras 3's.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tower/layers/layer.h"

namespace tower::layers {

struct RandomContrastOptions {
  std::vector<double> value_range = {0, 255};  // the output is clipped to it
  std::optional<std::uint64_t> seed;           // unset: one from tower::next_seed() when the layer is made
  std::string name;
};

// x: (batch, h, w, c) -> the same shape. Training: per image a factor f uniform in [1 - lower, 1 + upper],
// y = clip((x - m) f + m, value_range) with m the image's per-channel mean over height and width.
// Inference: x unchanged. No weights.
class RandomContrast : public Layer {
 public:
  // factor: one value for both bounds, or (lower, upper); each in [0, 1].
  explicit RandomContrast(const std::vector<double>& factor, const RandomContrastOptions& options = {});
  explicit RandomContrast(double factor, const RandomContrastOptions& options = {})
      : RandomContrast(std::vector<double>{factor}, options) {}

  void build(const std::vector<Shape>& input_shapes) override;
  std::vector<SymbolicTensor> call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) override;
  std::shared_ptr<Layer> share() const override { return std::make_shared<RandomContrast>(*this); }
  nlohmann::json get_config() const override;
  static LayerPtr from_config(const nlohmann::json& config);
  std::string class_name() const override { return "RandomContrast"; }

  double lower() const { return lower_; }
  double upper() const { return upper_; }

 private:
  double lower_, upper_;
  std::vector<double> value_range_;
  std::uint64_t seed_;
  bool seed_given_;
};

}  // namespace tower::layers
