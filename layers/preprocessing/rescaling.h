// Rescaling: y = x · scale + offset, as Keras's (a preprocessing layer inside the model).
#pragma once

#include <string>

#include "tower/layers/layer.h"

namespace tower::layers {

struct RescalingOptions {
  double offset = 0.0;
  std::string name;
};

// x: any shape -> x · scale + offset, same shape. No weights; the same in training and inference.
class Rescaling : public Layer {
 public:
  explicit Rescaling(double scale, const RescalingOptions& options = {});

  std::vector<SymbolicTensor> call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) override;
  std::shared_ptr<Layer> share() const override { return std::make_shared<Rescaling>(*this); }
  nlohmann::json get_config() const override;
  static LayerPtr from_config(const nlohmann::json& config);
  std::string class_name() const override { return "Rescaling"; }

  double scale() const { return scale_; }
  double offset() const { return offset_; }

 private:
  double scale_, offset_;
};

}  // namespace tower::layers
