// DepthwiseConv2D: each input channel convolved with its own depth_multiplier filters, as Keras's.
#pragma once

#include <string>
#include <vector>

#include "tower/layers/constraints.h"
#include "tower/layers/layer.h"

namespace tower::layers {

struct DepthwiseConv2DOptions {
  std::vector<std::int64_t> strides = {1, 1};        // one value or (height, width)
  std::string padding = "valid";                     // "valid" or "same"
  std::int64_t depth_multiplier = 1;                 // filters per input channel
  std::vector<std::int64_t> dilation_rate = {1, 1};  // one value or (height, width)
  std::string activation;                            // Keras name; "" = linear
  bool use_bias = true;
  Initializer depthwise_initializer = "glorot_uniform";
  Initializer bias_initializer = "zeros";
  Regularizer depthwise_regularizer;
  Regularizer bias_regularizer;
  Constraint depthwise_constraint;  // applied after each optimizer update
  Constraint bias_constraint;
  std::string data_format = "channels_last";  // or "channels_first" (Layer::data_format)
  std::string name;
};

// x: (batch, h, w, c) -> (batch, out_h, out_w, c·depth_multiplier); output channel c·m + j is channel c
// convolved with depthwise_kernel[:, :, c, j]. Weights: depthwise_kernel (kh, kw, c, depth_multiplier)
// (tf.keras 2's name; Keras 3 calls it kernel), bias (c·depth_multiplier,).
class DepthwiseConv2D : public Layer {
 public:
  // kernel_size: one value or (kh, kw).
  explicit DepthwiseConv2D(const std::vector<std::int64_t>& kernel_size, const DepthwiseConv2DOptions& options = {});
  explicit DepthwiseConv2D(std::int64_t kernel_size, const DepthwiseConv2DOptions& options = {})
      : DepthwiseConv2D(std::vector<std::int64_t>{kernel_size}, options) {}

  void build(const std::vector<Shape>& input_shapes) override;
  std::vector<SymbolicTensor> call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) override;
  std::shared_ptr<Layer> share() const override { return std::make_shared<DepthwiseConv2D>(*this); }
  nlohmann::json get_config() const override;
  static LayerPtr from_config(const nlohmann::json& config);
  std::string class_name() const override { return "DepthwiseConv2D"; }

  const std::vector<std::int64_t>& kernel_size() const { return kernel_size_; }  // (kh, kw)
  const DepthwiseConv2DOptions& options() const { return options_; }          // tuples normalized to pairs

 private:
  std::vector<std::int64_t> kernel_size_;
  DepthwiseConv2DOptions options_;
};

}  // namespace tower::layers
