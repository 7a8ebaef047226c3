// Conv3D: 3-D convolution over NDHWC volumes, y = activation(conv3d(x, kernel) + bias), as Keras's Conv3D.
#pragma once

#include <string>

#include "tower/layers/constraints.h"
#include "tower/layers/layer.h"

namespace tower::layers {

struct Conv3DOptions {
  std::vector<std::int64_t> strides = {1, 1, 1};        // one value or (depth, height, width)
  std::string padding = "valid";                        // "valid" or "same"
  std::vector<std::int64_t> dilation_rate = {1, 1, 1};  // one value or (depth, height, width)
  std::int64_t groups = 1;                              // channels and filters split into independent groups
  std::string activation;                               // Keras name; "" = linear
  bool use_bias = true;
  Initializer kernel_initializer = "glorot_uniform";
  Initializer bias_initializer = "zeros";
  Regularizer kernel_regularizer;
  Regularizer bias_regularizer;
  Regularizer activity_regularizer;  // on the output: Layer::activity_regularizer
  Constraint kernel_constraint;      // applied after each optimizer update
  Constraint bias_constraint;
  std::string data_format = "channels_last";  // or "channels_first" (Layer::data_format)
  std::string name;
};

// x: (batch, d, h, w, in) -> (batch, out_d, out_h, out_w, filters). Weights: kernel (kd, kh, kw, in / groups,
// filters), bias (filters,).
class Conv3D : public Layer {
 public:
  // kernel_size: one value or (kd, kh, kw).
  Conv3D(std::int64_t filters, const std::vector<std::int64_t>& kernel_size, const Conv3DOptions& options = {});
  Conv3D(std::int64_t filters, std::int64_t kernel_size, const Conv3DOptions& options = {})
      : Conv3D(filters, std::vector<std::int64_t>{kernel_size}, options) {}

  void build(const std::vector<Shape>& input_shapes) override;
  std::vector<SymbolicTensor> call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) override;
  std::shared_ptr<Layer> share() const override { return std::make_shared<Conv3D>(*this); }
  // Keras's get_config() (tf.keras 2's spelling) and the layer a config of any Keras version describes.
  nlohmann::json get_config() const override;
  static LayerPtr from_config(const nlohmann::json& config);
  std::string class_name() const override { return "Conv3D"; }

  std::int64_t filters() const { return filters_; }
  const std::vector<std::int64_t>& kernel_size() const { return kernel_size_; }  // (kd, kh, kw)
  const Conv3DOptions& options() const { return options_; }  // strides, dilation_rate normalized to triples

 private:
  std::int64_t filters_;
  std::vector<std::int64_t> kernel_size_;
  Conv3DOptions options_;
};

}  // namespace tower::layers
