// ConvLSTM2D: Keras's convolutional LSTM (Shi et al., 2015): an LSTM whose input and recurrent
// transformations are 2-D convolutions, over a sequence of images.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tower/layers/layer.h"

namespace tower::layers {

// Keras's arguments with tf.keras 2's defaults (channels_last only).
struct ConvLSTM2DOptions {
  std::vector<std::int64_t> strides = {1, 1};        // of the input convolution; the recurrent one has 1
  std::string padding = "valid";                     // of the input convolution; the recurrent one is "same"
  std::vector<std::int64_t> dilation_rate = {1, 1};
  std::string activation = "tanh";
  std::string recurrent_activation = "hard_sigmoid";  // tf.keras 2's ConvLSTM2D default (Keras 3: sigmoid)
  bool use_bias = true;
  Initializer kernel_initializer = "glorot_uniform";
  Initializer recurrent_initializer = "orthogonal";
  Initializer bias_initializer = "zeros";
  bool unit_forget_bias = true;
  Regularizer kernel_regularizer;
  Regularizer recurrent_regularizer;
  Regularizer bias_regularizer;
  bool return_sequences = false;
  bool return_state = false;
  bool go_backwards = false;
  std::string name;
};

// x: (batch, time, rows, cols, channels) with known time steps -> (batch, rows', cols', filters), or
// (batch, time, rows', cols', filters) with return_sequences; the final h and c follow with
// return_state; inputs 1 and 2, if given, are the initial h and c. Per step, with * a convolution:
// z = x_t * kernel + h_{t-1} * recurrent_kernel + bias, split along the channels into i, f, c, o as
// LSTM. A Keras mask on x skips steps. Weights: kernel (kh, kw, channels, 4·filters),
// recurrent_kernel (kh, kw, filters, 4·filters), bias (4·filters,). The cell runs step by step with
// ordinary ops (the input convolution of all steps is one op). Not implemented: stateful, dropout,
// recurrent_dropout, channels_first (configs with them are refused).
class ConvLSTM2D : public Layer {
 public:
  ConvLSTM2D(std::int64_t filters, const std::vector<std::int64_t>& kernel_size, const ConvLSTM2DOptions& options = {});

  void build(const std::vector<Shape>& input_shapes) override;
  std::vector<SymbolicTensor> call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) override;
  std::vector<SymbolicTensor> compute_mask(const std::vector<SymbolicTensor>& inputs,
                                           const std::vector<SymbolicTensor>& masks) const override;
  std::shared_ptr<Layer> share() const override { return std::make_shared<ConvLSTM2D>(*this); }
  nlohmann::json get_config() const override;
  static LayerPtr from_config(const nlohmann::json& config);
  std::string class_name() const override { return "ConvLSTM2D"; }

  std::int64_t filters() const { return filters_; }
  const ConvLSTM2DOptions& options() const { return options_; }

 private:
  std::int64_t filters_;
  std::vector<std::int64_t> kernel_size_;
  ConvLSTM2DOptions options_;
};

}  // namespace tower::layers
