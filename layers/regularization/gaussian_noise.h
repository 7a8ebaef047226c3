// GaussianNoise: while training, adds zero-centred normal noise of standard deviation `stddev`; the
// identity at inference. As Keras's GaussianNoise.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "tower/layers/layer.h"

namespace tower::layers {

struct GaussianNoiseOptions {
  // The noise's seed; unset draws one from tower::next_seed() when the layer is made (as Dropout).
  // Each training step still draws fresh noise.
  std::optional<std::uint64_t> seed;
  std::string name;
};

// x: any shape -> the same shape. No weights.
class GaussianNoise : public Layer {
 public:
  // stddev: the noise's standard deviation, >= 0 (Keras 3 also refuses above 1; tf.keras 2 does not).
  explicit GaussianNoise(double stddev, const GaussianNoiseOptions& options = {});

  std::vector<SymbolicTensor> call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) override;
  std::shared_ptr<Layer> share() const override { return std::make_shared<GaussianNoise>(*this); }
  bool supports_masking() const override { return true; }  // the mask passes on
  // Keras's get_config() (tf.keras 2's spelling) and the layer a config of any Keras version describes.
  nlohmann::json get_config() const override;
  static LayerPtr from_config(const nlohmann::json& config);
  std::string class_name() const override { return "GaussianNoise"; }

  double stddev() const { return stddev_; }
  std::uint64_t seed() const { return seed_; }

 private:
  double stddev_;
  std::uint64_t seed_;
  bool seed_given_ = false;  // the user's seed (written by get_config), not one drawn
};

}  // namespace tower::layers
