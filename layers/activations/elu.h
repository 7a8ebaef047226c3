// ELU: the exponential linear unit, x for x > 0 and alpha * (exp(x) - 1) otherwise, as Keras's ELU.
#pragma once

#include <string>

#include "tower/layers/layer.h"

namespace tower::layers {

struct ELUOptions {
  double alpha = 1.0;
  std::string name;
};

// x: any shape -> the same shape. No weights.
class ELU : public Layer {
 public:
  explicit ELU(const ELUOptions& options = {});
  explicit ELU(double alpha, const std::string& name = "") : ELU(ELUOptions{.alpha = alpha, .name = name}) {}

  std::vector<SymbolicTensor> call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) override;
  std::shared_ptr<Layer> share() const override { return std::make_shared<ELU>(*this); }
  bool supports_masking() const override { return true; }  // the mask passes on
  // Keras's get_config() (tf.keras 2's spelling) and the layer a config of any Keras version describes.
  nlohmann::json get_config() const override;
  static LayerPtr from_config(const nlohmann::json& config);
  std::string class_name() const override { return "ELU"; }

  double alpha() const { return alpha_; }

 private:
  double alpha_;
};

}  // namespace tower::layers
