// Activation: applies an activation function by Keras name, as Keras's Activation.
#pragma once

#include <string>

#include "tower/layers/layer.h"

namespace tower::layers {

struct ActivationOptions {
  std::string name;
};

// x: any shape -> the same shape. No weights.
class Activation : public Layer {
 public:
  // activation: a name of layers/activations/activations.h ("relu", "softmax", ...).
  explicit Activation(const std::string& activation, const ActivationOptions& options = {});

  std::vector<SymbolicTensor> call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) override;
  std::shared_ptr<Layer> share() const override { return std::make_shared<Activation>(*this); }
  bool supports_masking() const override { return true; }  // the mask passes on
  // Keras's get_config() (tf.keras 2's spelling) and the layer a config of any Keras version describes.
  nlohmann::json get_config() const override;
  static LayerPtr from_config(const nlohmann::json& config);
  std::string class_name() const override { return "Activation"; }

  const std::string& activation() const { return activation_; }

 private:
  std::string activation_;
};

}  // namespace tower::layers
