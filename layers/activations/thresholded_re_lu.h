// ThresholdedReLU: x where x > theta, else 0, as tf.keras 2's ThresholdedReLU (Keras 3 dropped the layer).
#pragma once

#include <string>

#include "tower/layers/layer.h"

namespace tower::layers {

struct ThresholdedReLUOptions {
  double theta = 1.0;  // tf.keras 2's default; must be >= 0
  std::string name;
};

// x: any shape -> the same shape. No weights. The gradient is 1 where x > theta, else 0.
class ThresholdedReLU : public Layer {
 public:
  explicit ThresholdedReLU(const ThresholdedReLUOptions& options = {});

  std::vector<SymbolicTensor> call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) override;
  std::shared_ptr<Layer> share() const override { return std::make_shared<ThresholdedReLU>(*this); }
  bool supports_masking() const override { return true; }  // the mask passes on
  // Keras's get_config() (tf.keras 2's spelling) and the layer a config of any Keras version describes.
  nlohmann::json get_config() const override;
  static LayerPtr from_config(const nlohmann::json& config);
  std::string class_name() const override { return "ThresholdedReLU"; }

  double theta() const { return theta_; }

 private:
  double theta_;
};

}  // namespace tower::layers
