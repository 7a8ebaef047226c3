// LocallyConnected1D: a 1-D convolution whose weights are not shared between output steps, as
// tf.keras 2's LocallyConnected1D (Keras 3 dropped it).
#pragma once

#include <cstdint>
#include <string>

#include "tower/layers/constraints.h"
#include "tower/layers/layer.h"

namespace tower::layers {

struct LocalConvGeometry;

struct LocallyConnected1DOptions {
  std::int64_t strides = 1;
  std::string padding = "valid";  // "valid", or "same" with implementation 2 or 3 (as Keras)
  std::string activation;         // Keras name; "" = linear
  bool use_bias = true;
  Initializer kernel_initializer = "glorot_uniform";
  Initializer bias_initializer = "zeros";
  Regularizer kernel_regularizer;
  Regularizer bias_regularizer;
  Regularizer activity_regularizer;  // on the output: Layer::activity_regularizer
  Constraint kernel_constraint;      // applied after each optimizer update
  Constraint bias_constraint;
  std::string data_format = "channels_last";  // or "channels_first" (Layer::data_format)
  // Keras's kernel layout: 1, (out_steps, k·in, filters); 2, a dense masked (steps, in, out_steps,
  // filters); 3, the values of a sparse one (local_conv.h). Stored, saved and loaded in Keras's layout.
  std::int64_t implementation = 1;
  std::string name;
};

// x: (batch, steps, in) -> (batch, out_steps, filters), out_steps = (steps - k) / stride + 1 ("valid")
// or ceil(steps / stride) ("same": the window starts k // 2 before, as Keras's).
// Weights: kernel, implementation 1: (out_steps, k * in, filters), each step's window flattened as (k, in),
// or (in, k) with channels_first; 2 and 3: local_conv_kernel_shape; bias (out_steps, filters).
class LocallyConnected1D : public Layer {
 public:
  LocallyConnected1D(std::int64_t filters, std::int64_t kernel_size, const LocallyConnected1DOptions& options = {});

  void build(const std::vector<Shape>& input_shapes) override;
  std::vector<SymbolicTensor> call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) override;
  std::shared_ptr<Layer> share() const override { return std::make_shared<LocallyConnected1D>(*this); }
  // Keras's get_config() (tf.keras 2's spelling) and the layer a config of any Keras version describes.
  nlohmann::json get_config() const override;
  static LayerPtr from_config(const nlohmann::json& config);
  std::string class_name() const override { return "LocallyConnected1D"; }

  std::int64_t filters() const { return filters_; }
  std::int64_t kernel_size() const { return kernel_size_; }
  const LocallyConnected1DOptions& options() const { return options_; }

 private:
  LocalConvGeometry geometry(const Shape& input) const;  // input (batch, steps, in), channels last

  std::int64_t filters_;
  std::int64_t kernel_size_;
  LocallyConnected1DOptions options_;
};

}  // namespace tower::layers
