// BatchNormalization: normalizes each channel (the last axis, or `axis`) with the batch's statistics while
// training and with moving averages of them at inference, as Keras 3's BatchNormalization.
#pragma once

#include <string>

#include "tower/layers/constraints.h"
#include "tower/layers/layer.h"

namespace tower::layers {

struct BatchNormalizationOptions {
  int axis = -1;  // the channel axis: -1 (channels_last) or 1 (channels_first), any but the batch
  double momentum = 0.99;
  double epsilon = 1e-3;
  bool center = true;  // add beta
  bool scale = true;   // multiply by gamma
  Initializer beta_initializer = "zeros";
  Initializer gamma_initializer = "ones";
  Initializer moving_mean_initializer = "zeros";
  Initializer moving_variance_initializer = "ones";
  Regularizer beta_regularizer;
  Regularizer gamma_regularizer;
  Constraint beta_constraint;  // applied after each optimizer update
  Constraint gamma_constraint;
  std::string name;
};

// x: (batch, ..., c) -> the same shape (c on `axis`; the kernels see it moved last). Weights: gamma (c,), beta (c,) trainable; moving_mean (c,),
// moving_variance (c,) non-trainable. Training (and trainable) uses the batch's mean and biased
// variance and appends to ctx.updates: moving = moving * momentum + batch * (1 - momentum).
class BatchNormalization : public Layer {
 public:
  explicit BatchNormalization(const BatchNormalizationOptions& options = {});

  void build(const std::vector<Shape>& input_shapes) override;
  std::vector<SymbolicTensor> call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) override;
  std::shared_ptr<Layer> share() const override { return std::make_shared<BatchNormalization>(*this); }
  bool supports_masking() const override { return true; }  // the mask passes on
  // Keras's get_config() (tf.keras 2's spelling) and the layer a config of any Keras version describes.
  nlohmann::json get_config() const override;
  static LayerPtr from_config(const nlohmann::json& config);
  std::string class_name() const override { return "BatchNormalization"; }

  const BatchNormalizationOptions& options() const { return options_; }

 private:
  // options.axis made non-negative for an input of this shape; throws for the batch axis or out of range.
  int channel_axis(const Shape& shape) const;
  // The normalization of x with its channels last: (batch, ..., c) -> the same shape.
  SymbolicTensor normalize(CallContext& ctx, const SymbolicTensor& x);

  BatchNormalizationOptions options_;
};

}  // namespace tower::layers
