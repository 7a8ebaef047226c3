// LocallyConnected2D: a 2-D convolution whose weights are not shared between output positions, as
// tf.keras 2's LocallyConnected2D (Keras 3 dropped it).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tower/layers/constraints.h"
#include "tower/layers/layer.h"

namespace tower::layers {

struct LocalConvGeometry;

struct LocallyConnected2DOptions {
  std::vector<std::int64_t> strides = {1, 1};  // one value or (height, width)
  std::string padding = "valid";               // "valid", or "same" with implementation 2 or 3 (as Keras)
  std::string activation;                      // Keras name; "" = linear
  bool use_bias = true;
  Initializer kernel_initializer = "glorot_uniform";
  Initializer bias_initializer = "zeros";
  Regularizer kernel_regularizer;
  Regularizer bias_regularizer;
  Regularizer activity_regularizer;  // on the output: Layer::activity_regularizer
  Constraint kernel_constraint;      // applied after each optimizer update
  Constraint bias_constraint;
  std::string data_format = "channels_last";  // or "channels_first" (Layer::data_format)
  // Keras's kernel layout (local_conv.h): 1, one (kh·kw·in, filters) matrix per output position; 2, a
  // dense masked kernel (rows, cols, in, out_rows, out_cols, filters); 3, the values of a sparse one.
  // Computed alike (2 and 3 gathered into 1's layout); stored, saved and loaded in Keras's layout.
  std::int64_t implementation = 1;
  std::string name;
};

// x: (batch, rows, cols, in) -> (batch, out_rows, out_cols, filters), out = (in - k) / stride + 1
// ("valid") or ceil(in / stride) ("same": the window starts k // 2 before, as Keras's).
// Weights: kernel, implementation 1: (out_rows * out_cols, kh * kw * in, filters), each position's patch
// flattened as (kh, kw, in), or (in, kh, kw) with channels_first; 2 and 3: local_conv_kernel_shape;
// bias (out_rows, out_cols, filters).
// y[b, r, c, :] = activation(patch(b, r, c) · kernel[r * out_cols + c] + bias[r, c, :]).
class LocallyConnected2D : public Layer {
 public:
  // kernel_size: one value or (kh, kw).
  LocallyConnected2D(std::int64_t filters, const std::vector<std::int64_t>& kernel_size,
                     const LocallyConnected2DOptions& options = {});
  LocallyConnected2D(std::int64_t filters, std::int64_t kernel_size, const LocallyConnected2DOptions& options = {})
      : LocallyConnected2D(filters, std::vector<std::int64_t>{kernel_size}, options) {}

  void build(const std::vector<Shape>& input_shapes) override;
  std::vector<SymbolicTensor> call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) override;
  std::shared_ptr<Layer> share() const override { return std::make_shared<LocallyConnected2D>(*this); }
  // Keras's get_config() (tf.keras 2's spelling) and the layer a config of any Keras version describes.
  nlohmann::json get_config() const override;
  static LayerPtr from_config(const nlohmann::json& config);
  std::string class_name() const override { return "LocallyConnected2D"; }

  std::int64_t filters() const { return filters_; }
  const std::vector<std::int64_t>& kernel_size() const { return kernel_size_; }  // (kh, kw)
  const LocallyConnected2DOptions& options() const { return options_; }          // strides as (sh, sw)

 private:
  LocalConvGeometry geometry(const Shape& input) const;  // input (batch, rows, cols, in), channels last

  std::int64_t filters_;
  std::vector<std::int64_t> kernel_size_;
  LocallyConnected2DOptions options_;
};

}  // namespace tower::layers
