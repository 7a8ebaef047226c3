// LayerNormalization: normalizes each sample over its last axis (or given axes), as Keras's
// LayerNormalization.
#pragma once

#include <string>
#include <vector>

#include "tower/layers/constraints.h"
#include "tower/layers/layer.h"

namespace tower::layers {

struct LayerNormalizationOptions {
  // The normalized axes (negative from the end; not the batch axis 0). Keras's int is one entry.
  std::vector<int> axis = {-1};
  double epsilon = 1e-3;
  bool center = true;  // add beta
  bool scale = true;   // multiply by gamma
  Initializer beta_initializer = "zeros";
  Initializer gamma_initializer = "ones";
  Regularizer beta_regularizer;
  Regularizer gamma_regularizer;
  Constraint beta_constraint;  // applied after each optimizer update
  Constraint gamma_constraint;
  std::string name;
};

// x: (batch, ...) -> the same shape: per sample, over the axes, y = (x - mean) / sqrt(variance +
// epsilon) * gamma + beta, the variance the mean of squared deviations, computed as Keras's
// ops.layer_normalization does (x * inv + (beta - mean * inv), inv = gamma / sqrt(variance + epsilon)).
// Ordinary ops, so autodiff gives the gradient. Weights: gamma, beta with the normalized axes' sizes
// ((c,) for the last axis). Masks pass on (Keras's supports_masking).
class LayerNormalization : public Layer {
 public:
  explicit LayerNormalization(const LayerNormalizationOptions& options = {});

  void build(const std::vector<Shape>& input_shapes) override;
  std::vector<SymbolicTensor> call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) override;
  std::shared_ptr<Layer> share() const override { return std::make_shared<LayerNormalization>(*this); }
  bool supports_masking() const override { return true; }
  // Keras's get_config() (tf.keras 2's spelling: axis as given until built, then the sorted
  // non-negative list) and the layer a config of any Keras version describes.
  nlohmann::json get_config() const override;
  static LayerPtr from_config(const nlohmann::json& config);
  std::string class_name() const override { return "LayerNormalization"; }

  const LayerNormalizationOptions& options() const { return options_; }

 private:
  // The axes for an input of this shape: non-negative, sorted; ValueError when out of range, repeated
  // or the batch axis.
  std::vector<int> axes_for(const Shape& shape) const;

  LayerNormalizationOptions options_;
};

}  // namespace tower::layers
