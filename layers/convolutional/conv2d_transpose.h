// Conv2DTranspose: the transposed 2-D convolution (the data gradient of a Conv2D), as Keras's.
#pragma once

#include <string>
#include <vector>

#include "tower/layers/constraints.h"
#include "tower/layers/layer.h"

namespace tower::layers {

struct Conv2DTransposeOptions {
  std::vector<std::int64_t> strides = {1, 1};        // one value or (height, width)
  std::string padding = "valid";                     // "valid" or "same"
  std::vector<std::int64_t> output_padding;          // empty: None; else one value or (height, width)
  std::vector<std::int64_t> dilation_rate = {1, 1};  // one value or (height, width)
  std::string activation;                            // Keras name; "" = linear
  bool use_bias = true;
  Initializer kernel_initializer = "glorot_uniform";
  Initializer bias_initializer = "zeros";
  Regularizer kernel_regularizer;
  Regularizer bias_regularizer;
  Constraint kernel_constraint;  // applied after each optimizer update
  Constraint bias_constraint;
  std::string data_format = "channels_last";  // or "channels_first" (Layer::data_format)
  std::string name;
};

// x: (batch, h, w, in) -> (batch, out_h, out_w, filters), out_h = h·stride ("same"), h·stride +
// max(kh - stride, 0) ("valid"; the dilated kh), or with output_padding as Keras's deconv_output_length.
// Weights: kernel (kh, kw, filters, in) (Keras's layout), bias (filters,).
class Conv2DTranspose : public Layer {
 public:
  // kernel_size: one value or (kh, kw).
  Conv2DTranspose(std::int64_t filters, const std::vector<std::int64_t>& kernel_size,
                  const Conv2DTransposeOptions& options = {});
  Conv2DTranspose(std::int64_t filters, std::int64_t kernel_size, const Conv2DTransposeOptions& options = {})
      : Conv2DTranspose(filters, std::vector<std::int64_t>{kernel_size}, options) {}

  void build(const std::vector<Shape>& input_shapes) override;
  std::vector<SymbolicTensor> call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) override;
  std::shared_ptr<Layer> share() const override { return std::make_shared<Conv2DTranspose>(*this); }
  nlohmann::json get_config() const override;
  static LayerPtr from_config(const nlohmann::json& config);
  std::string class_name() const override { return "Conv2DTranspose"; }

  std::int64_t filters() const { return filters_; }
  const std::vector<std::int64_t>& kernel_size() const { return kernel_size_; }  // (kh, kw)
  const Conv2DTransposeOptions& options() const { return options_; }          // tuples normalized to pairs

 private:
  std::int64_t filters_;
  std::vector<std::int64_t> kernel_size_;
  Conv2DTransposeOptions options_;
};

}  // namespace tower::layers
