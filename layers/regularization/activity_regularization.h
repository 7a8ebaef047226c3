// ActivityRegularization: the identity, whose activity regularizer L1L2(l1, l2) adds
// (l1 sum|x| + l2 sum x^2) / batch rows to the loss of fit and evaluate. As Keras's
// ActivityRegularization.
#pragma once

#include <string>

#include "tower/layers/layer.h"

namespace tower::layers {

struct ActivityRegularizationOptions {
  std::string name;
};

// x: any shape -> the same shape. No weights.
class ActivityRegularization : public Layer {
 public:
  // l1, l2: the factors, >= 0 (Keras's defaults 0).
  explicit ActivityRegularization(double l1 = 0.0, double l2 = 0.0, const ActivityRegularizationOptions& options = {});

  std::vector<SymbolicTensor> call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) override;
  std::shared_ptr<Layer> share() const override { return std::make_shared<ActivityRegularization>(*this); }
  bool supports_masking() const override { return true; }  // the mask passes on
  // Keras's get_config() ({l1, l2}, no activity_regularizer, as both Keras versions write it) and the
  // layer a config of any Keras version describes.
  nlohmann::json get_config() const override;
  static LayerPtr from_config(const nlohmann::json& config);
  std::string class_name() const override { return "ActivityRegularization"; }

  double l1() const { return l1_; }
  double l2() const { return l2_; }

 private:
  double l1_, l2_;
};

}  // namespace tower::layers
