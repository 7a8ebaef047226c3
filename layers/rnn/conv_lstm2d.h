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
  // Training only, as tf.keras 2's ConvLSTM2D: dropout drops input pixels·channels with one mask
  // (batch, rows, cols, channels) per sequence and gate, recurrent_dropout h_{t-1}'s with one mask
  // (batch, rows', cols', filters) per sequence and gate (Keras 3 shares one mask between the gates).
  double dropout = 0.0;
  double recurrent_dropout = 0.0;
  std::optional<std::uint64_t> seed;  // the dropout masks' (drawn from the global seed when unset)
  // The final h and c of a batch are the next batch's initial states: needs a fixed batch size (the
  // Input's batch_size); reset_states() zeroes them. They are not weights.
  bool stateful = false;
  std::string name;
};

// x: (batch, time, rows, cols, channels) with known time steps -> (batch, rows', cols', filters), or
// (batch, time, rows', cols', filters) with return_sequences; the final h and c follow with
// return_state; inputs 1 and 2, if given, are the initial h and c. Per step, with * a convolution:
// z = x_t * kernel + h_{t-1} * recurrent_kernel + bias, split along the channels into i, f, c, o as
// LSTM. A Keras mask on x skips steps. Weights: kernel (kh, kw, channels, 4·filters),
// recurrent_kernel (kh, kw, filters, 4·filters), bias (4·filters,). The cell runs step by step with
// ordinary ops (the input convolution of all steps is one op; four, one per gate, with input dropout
// in training). Not implemented: channels_first (configs with it are refused).
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
  // Keras's layer.states of a stateful layer (h, c; (batch, rows', cols', filters) each), empty before
  // its first call or when not stateful.
  std::vector<VariablePtr> states() const { return *state_variables_; }
  void reset_states() override;

 private:
  // The input convolution of every step plus bias (batch·time, rows', cols', 4·filters), with
  // input dropout in training.
  SymbolicTensor input_convolution(CallContext& ctx, const SymbolicTensor& x, const SymbolicTensor& kernel);

  std::int64_t filters_;
  std::vector<std::int64_t> kernel_size_;
  ConvLSTM2DOptions options_;
  std::uint64_t seed_ = 0;
  // Shared by every handle of the layer, as its weights are.
  std::shared_ptr<std::vector<VariablePtr>> state_variables_ = std::make_shared<std::vector<VariablePtr>>();
};

}  // namespace tower::layers
