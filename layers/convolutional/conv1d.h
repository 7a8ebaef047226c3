// Conv1D: 1-D convolution over (batch, steps, channels) sequences, y = activation(conv1d(x, kernel) + bias),
// as Keras's Conv1D (padding "valid", "same" or "causal").
#pragma once

#include <cstdint>
#include <string>

#include "tower/layers/constraints.h"
#include "tower/layers/layer.h"

namespace tower::layers {

struct Conv1DOptions {
  std::int64_t strides = 1;
  std::string padding = "valid";  // "valid", "same" or "causal" (left-padded: y[t] sees x[.. t] only)
  std::int64_t dilation_rate = 1;
  std::int64_t groups = 1;  // channels and filters split into independent groups (Conv2D's groups)
  std::string activation;   // Keras name; "" = linear
  bool use_bias = true;
  Initializer kernel_initializer = "glorot_uniform";
  Initializer bias_initializer = "zeros";
  Regularizer kernel_regularizer;
  Regularizer bias_regularizer;
  Regularizer activity_regularizer;  // on the output: Layer::activity_regularizer
  Constraint kernel_constraint;  // applied after each optimizer update
  Constraint bias_constraint;
  std::string data_format = "channels_last";  // or "channels_first" (Layer::data_format)
  std::string name;
};

// x: (batch, steps, in) -> (batch, out_steps, filters). Weights: kernel (kernel_size, in / groups, filters),
// bias (filters,).
// Runs the conv2d op on a (batch, 1, steps, in) view of x; the number of steps must be known.
class Conv1D : public Layer {
 public:
  Conv1D(std::int64_t filters, std::int64_t kernel_size, const Conv1DOptions& options = {});

  void build(const std::vector<Shape>& input_shapes) override;
  std::vector<SymbolicTensor> call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) override;
  std::shared_ptr<Layer> share() const override { return std::make_shared<Conv1D>(*this); }
  // Keras's get_config() (tf.keras 2's spelling) and the layer a config of any Keras version describes.
  nlohmann::json get_config() const override;
  static LayerPtr from_config(const nlohmann::json& config);
  std::string class_name() const override { return "Conv1D"; }

  std::int64_t filters() const { return filters_; }
  std::int64_t kernel_size() const { return kernel_size_; }
  const Conv1DOptions& options() const { return options_; }  // padding lower-cased

 private:
  std::int64_t filters_;
  std::int64_t kernel_size_;
  Conv1DOptions options_;
};

}  // namespace tower::layers
