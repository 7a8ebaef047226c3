// Dense: y = activation(x · kernel + bias), Keras's densely connected layer.
#pragma once

#include <string>

#include "tower/layers/constraints.h"
#include "tower/layers/layer.h"

namespace tower::layers {

struct DenseOptions {
  std::string activation;  // Keras name; "" = linear
  bool use_bias = true;
  Initializer kernel_initializer = "glorot_uniform";
  Initializer bias_initializer = "zeros";
  Regularizer kernel_regularizer;
  Regularizer bias_regularizer;
  Regularizer activity_regularizer;  // on the output: Layer::activity_regularizer
  Constraint kernel_constraint;  // applied after each optimizer update
  Constraint bias_constraint;
  std::string name;
};

// x: (batch, ..., in) -> (batch, ..., units). Weights: kernel (in, units), bias (units,).
class Dense : public Layer {
 public:
  explicit Dense(std::int64_t units, const DenseOptions& options = {});

  void build(const std::vector<Shape>& input_shapes) override;
  std::vector<SymbolicTensor> call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) override;
  std::shared_ptr<Layer> share() const override { return std::make_shared<Dense>(*this); }
  bool supports_masking() const override { return true; }  // the mask passes on
  // Keras's get_config() (tf.keras 2's spelling) and the layer a config of any Keras version describes.
  nlohmann::json get_config() const override;
  static LayerPtr from_config(const nlohmann::json& config);
  std::string class_name() const override { return "Dense"; }

  std::int64_t units() const { return units_; }
  const DenseOptions& options() const { return options_; }

 private:
  std::int64_t units_;
  DenseOptions options_;
};

}  // namespace tower::layers
