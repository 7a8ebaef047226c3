// PReLU: the parametric rectified linear unit, as Keras's PReLU (a learned slope below zero).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tower/layers/constraints.h"
#include "tower/layers/layer.h"

namespace tower::layers {

struct PReLUOptions {
  Initializer alpha_initializer = "zeros";
  Regularizer alpha_regularizer;
  Constraint alpha_constraint;
  // Axes (1-based, as Keras counts them with the batch at 0) along which one slope is shared: {1, 2}
  // for (batch, height, width, channels) gives one slope per channel. Empty: one slope per element.
  std::vector<std::int64_t> shared_axes;
  std::string name;
};

// y = x for x > 0, alpha * x otherwise. x: (batch, ...) -> the same shape.
// Weights: alpha (...), the shape of one sample with the shared axes set to 1.
class PReLU : public Layer {
 public:
  explicit PReLU(const PReLUOptions& options = {});

  void build(const std::vector<Shape>& input_shapes) override;
  std::vector<SymbolicTensor> call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) override;
  std::shared_ptr<Layer> share() const override { return std::make_shared<PReLU>(*this); }
  // Keras's get_config() (tf.keras 2's spelling) and the layer a config of any Keras version describes.
  nlohmann::json get_config() const override;
  static LayerPtr from_config(const nlohmann::json& config);
  std::string class_name() const override { return "PReLU"; }

  const PReLUOptions& options() const { return options_; }

 private:
  PReLUOptions options_;
};

}  // namespace tower::layers
