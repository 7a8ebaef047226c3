// Softmax: exp(x) / sum(exp(x)) along one axis, as Keras's Softmax layer.
#pragma once

#include <string>

#include "tower/layers/layer.h"

namespace tower::layers {

struct SoftmaxOptions {
  int axis = -1;
  std::string name;
};

// x: any shape of rank >= 1 -> the same shape. No weights.
class Softmax : public Layer {
 public:
  explicit Softmax(const SoftmaxOptions& options = {});

  std::vector<SymbolicTensor> call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) override;
  std::shared_ptr<Layer> share() const override { return std::make_shared<Softmax>(*this); }
  bool supports_masking() const override { return true; }  // the mask passes on
  // Keras's get_config() (tf.keras 2's spelling) and the layer a config of any Keras version describes.
  nlohmann::json get_config() const override;
  static LayerPtr from_config(const nlohmann::json& config);
  std::string class_name() const override { return "Softmax"; }

  int axis() const { return axis_; }

 private:
  int axis_;
};

}  // namespace tower::layers
