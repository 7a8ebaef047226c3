// SeparableConv2D: a depthwise convolution followed by a 1x1 (pointwise) convolution, as Keras's.
#pragma once

#include <string>
#include <vector>

#include "tower/layers/constraints.h"
#include "tower/layers/layer.h"

namespace tower::layers {

struct SeparableConv2DOptions {
  std::vector<std::int64_t> strides = {1, 1};        // one value or (height, width): the depthwise step's
  std::string padding = "valid";                     // "valid" or "same": the depthwise step's
  std::vector<std::int64_t> dilation_rate = {1, 1};  // one value or (height, width)
  std::int64_t depth_multiplier = 1;                 // depthwise filters per input channel
  std::string activation;                            // Keras name; "" = linear
  bool use_bias = true;
  Initializer depthwise_initializer = "glorot_uniform";
  Initializer pointwise_initializer = "glorot_uniform";
  Initializer bias_initializer = "zeros";
  Regularizer depthwise_regularizer;
  Regularizer pointwise_regularizer;
  Regularizer bias_regularizer;
  Constraint depthwise_constraint;  // applied after each optimizer update
  Constraint pointwise_constraint;
  Constraint bias_constraint;
  std::string data_format = "channels_last";  // or "channels_first" (Layer::data_format)
  std::string name;
};

// x: (batch, h, w, c) -> (batch, out_h, out_w, filters): depthwise_conv2d(x, depthwise_kernel) with the
// window arguments, then conv2d with the 1x1 pointwise_kernel. Weights: depthwise_kernel (kh, kw, c,
// depth_multiplier), pointwise_kernel (1, 1, c·depth_multiplier, filters), bias (filters,).
class SeparableConv2D : public Layer {
 public:
  // kernel_size: one value or (kh, kw).
  SeparableConv2D(std::int64_t filters, const std::vector<std::int64_t>& kernel_size,
                  const SeparableConv2DOptions& options = {});
  SeparableConv2D(std::int64_t filters, std::int64_t kernel_size, const SeparableConv2DOptions& options = {})
      : SeparableConv2D(filters, std::vector<std::int64_t>{kernel_size}, options) {}

  void build(const std::vector<Shape>& input_shapes) override;
  std::vector<SymbolicTensor> call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) override;
  std::shared_ptr<Layer> share() const override { return std::make_shared<SeparableConv2D>(*this); }
  nlohmann::json get_config() const override;
  static LayerPtr from_config(const nlohmann::json& config);
  std::string class_name() const override { return "SeparableConv2D"; }

  std::int64_t filters() const { return filters_; }
  const std::vector<std::int64_t>& kernel_size() const { return kernel_size_; }  // (kh, kw)
  const SeparableConv2DOptions& options() const { return options_; }          // tuples normalized to pairs

 private:
  std::int64_t filters_;
  std::vector<std::int64_t> kernel_size_;
  SeparableConv2DOptions options_;
};

}  // namespace tower::layers
