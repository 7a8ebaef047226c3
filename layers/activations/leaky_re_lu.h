// LeakyReLU: x for x >= 0, negative_slope * x otherwise, as Keras's LeakyReLU.
#pragma once

#include <optional>
#include <string>

#include "tower/layers/layer.h"

namespace tower::layers {

struct LeakyReLUOptions {
  double negative_slope = 0.3;  // Keras 3's name and default
  std::optional<double> alpha;  // tf.keras 2's name for negative_slope; wins when set
  std::string name;
};

// x: any shape -> the same shape. No weights.
class LeakyReLU : public Layer {
 public:
  explicit LeakyReLU(const LeakyReLUOptions& options = {});
  explicit LeakyReLU(double negative_slope, const std::string& name = "")
      : LeakyReLU(LeakyReLUOptions{.negative_slope = negative_slope, .name = name}) {}

  std::vector<SymbolicTensor> call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) override;
  std::shared_ptr<Layer> share() const override { return std::make_shared<LeakyReLU>(*this); }
  bool supports_masking() const override { return true; }  // the mask passes on
  // Keras's get_config() (tf.keras 2's spelling) and the layer a config of any Keras version describes.
  nlohmann::json get_config() const override;
  static LayerPtr from_config(const nlohmann::json& config);
  std::string class_name() const override { return "LeakyReLU"; }

  double negative_slope() const { return negative_slope_; }

 private:
  double negative_slope_;
};

}  // namespace tower::layers
