// Conv3DTranspose: the transposed 3-D convolution (the data gradient of a Conv3D), as Keras's.
#pragma once

#include <string>
#include <vector>

#include "tower/layers/constraints.h"
#include "tower/layers/layer.h"

namespace tower::layers {

struct Conv3DTransposeOptions {
  std::vector<std::int64_t> strides = {1, 1, 1};        // one value or (depth, height, width)
  std::string padding = "valid";                        // "valid" or "same"
  std::vector<std::int64_t> output_padding;             // empty: None; else one value or (depth, height, width)
  std::vector<std::int64_t> dilation_rate = {1, 1, 1};  // one value or (depth, height, width)
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

// x: (batch, d, h, w, in) -> (batch, out_d, out_h, out_w, filters), each length d·stride ("same"),
// d·stride + max(kd - stride, 0) ("valid"; the dilated kd), or with output_padding as Keras's
// deconv_output_length. Weights: kernel (kd, kh, kw, filters, in), bias (filters,).
class Conv3DTranspose : public Layer {
 public:
  // kernel_size: one value or (kd, kh, kw).
  Conv3DTranspose(std::int64_t filters, const std::vector<std::int64_t>& kernel_size,
                  const Conv3DTransposeOptions& options = {});
  Conv3DTranspose(std::int64_t filters, std::int64_t kernel_size, const Conv3DTransposeOptions& options = {})
      : Conv3DTranspose(filters, std::vector<std::int64_t>{kernel_size}, options) {}

  void build(const std::vector<Shape>& input_shapes) override;
  std::vector<SymbolicTensor> call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) override;
  std::shared_ptr<Layer> share() const override { return std::make_shared<Conv3DTranspose>(*this); }
  nlohmann::json get_config() const override;
  static LayerPtr from_config(const nlohmann::json& config);
  std::string class_name() const override { return "Conv3DTranspose"; }

  std::int64_t filters() const { return filters_; }
  const std::vector<std::int64_t>& kernel_size() const { return kernel_size_; }  // (kd, kh, kw)
  const Conv3DTransposeOptions& options() const { return options_; }

 private:
  std::int64_t filters_;
  std::vector<std::int64_t> kernel_size_;
  Conv3DTransposeOptions options_;
};

}  // namespace tower::layers
