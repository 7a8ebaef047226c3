// Conv2D: 2-D convolution over NHWC images, y = activation(conv2d(x, kernel) + bias), as Keras's Conv2D.
#pragma once

#include <string>

#include "tower/layers/constraints.h"
#include "tower/layers/layer.h"

namespace tower::layers {

struct Conv2DOptions {
  std::vector<std::int64_t> strides = {1, 1};        // one value or (height, width)
  std::string padding = "valid";                     // "valid" or "same"
  std::vector<std::int64_t> dilation_rate = {1, 1};  // one value or (height, width)
  std::int64_t groups = 1;                           // channels and filters split into independent groups
  std::string activation;                            // Keras name; "" = linear
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

// x: (batch, h, w, in) -> (batch, out_h, out_w, filters). Weights: kernel (kh, kw, in / groups, filters),
// bias (filters,). With groups, filters [g f/groups, (g+1) f/groups) see only channels [g in/groups, ...).
class Conv2D : public Layer {
 public:
  // kernel_size: one value or (kh, kw).
  Conv2D(std::int64_t filters, const std::vector<std::int64_t>& kernel_size, const Conv2DOptions& options = {});
  Conv2D(std::int64_t filters, std::int64_t kernel_size, const Conv2DOptions& options = {})
      : Conv2D(filters, std::vector<std::int64_t>{kernel_size}, options) {}

  void build(const std::vector<Shape>& input_shapes) override;
  std::vector<SymbolicTensor> call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) override;
  std::shared_ptr<Layer> share() const override { return std::make_shared<Conv2D>(*this); }
  // Keras's get_config() (tf.keras 2's spelling) and the layer a config of any Keras version describes.
  nlohmann::json get_config() const override;
  static LayerPtr from_config(const nlohmann::json& config);
  std::string class_name() const override { return "Conv2D"; }

  std::int64_t filters() const { return filters_; }
  const std::vector<std::int64_t>& kernel_size() const { return kernel_size_; }  // (kh, kw)
  const Conv2DOptions& options() const { return options_; }  // strides, dilation_rate normalized to pairs

 private:
  std::int64_t filters_;
  std::vector<std::int64_t> kernel_size_;
  Conv2DOptions options_;
};

}  // namespace tower::layers
