// Flatten: folds every axis but the batch into one, as Keras's Flatten.
#pragma once

#include <string>

#include "tower/layers/layer.h"

namespace tower::layers {

struct FlattenOptions {
  std::string data_format = "channels_last";  // or "channels_first" (Layer::data_format)
  std::string name;
};

// x: (batch, d1, ..., dk) -> (batch, d1 * ... * dk); (batch,) -> (batch, 1). No weights.
class Flatten : public Layer {
 public:
  explicit Flatten(const FlattenOptions& options = {});

  std::vector<SymbolicTensor> call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) override;
  std::shared_ptr<Layer> share() const override { return std::make_shared<Flatten>(*this); }
  // Keras's get_config() (tf.keras 2's spelling) and the layer a config of any Keras version describes.
  nlohmann::json get_config() const override;
  static LayerPtr from_config(const nlohmann::json& config);
  std::string class_name() const override { return "Flatten"; }
};

}  // namespace tower::layers
