// ReLU: the rectified linear unit with Keras's max_value, negative_slope and threshold, as Keras's ReLU.
#pragma once

#include <optional>
#include <string>

#include "tower/layers/layer.h"

namespace tower::layers {

struct ReLUOptions {
  std::optional<double> max_value;  // clip the output at this value (>= 0); unset: no clipping
  double negative_slope = 0.0;      // slope below the threshold (>= 0)
  double threshold = 0.0;           // (>= 0) values at or below it are zeroed (or scaled by negative_slope)
  std::string name;
};

// y = x for threshold < x (clipped at max_value), negative_slope * (x - threshold) otherwise.
// x: any shape -> the same shape. No weights.
class ReLU : public Layer {
 public:
  explicit ReLU(const ReLUOptions& options = {});

  std::vector<SymbolicTensor> call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) override;
  std::shared_ptr<Layer> share() const override { return std::make_shared<ReLU>(*this); }
  bool supports_masking() const override { return true; }  // the mask passes on
  // Keras's get_config() (tf.keras 2's spelling) and the layer a config of any Keras version describes.
  nlohmann::json get_config() const override;
  static LayerPtr from_config(const nlohmann::json& config);
  std::string class_name() const override { return "ReLU"; }

  const ReLUOptions& options() const { return options_; }

 private:
  ReLUOptions options_;
};

}  // namespace tower::layers
