// Recurrent: the base of SimpleRNN, LSTM and GRU (Keras's RNN with one of its built-in cells): the
// arguments they share, their weights, and the call that runs the cell's fused op over the sequence.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tower/core/ops.h"
#include "tower/layers/layer.h"

namespace tower::layers {

class ConfigReader;

// Keras's arguments with tf.keras 2's defaults. The fields only some layers have are optional and
// take that layer's default when unset; setting one on a layer without it is a ValueError.
struct RecurrentOptions {
  std::string activation = "tanh";
  std::optional<std::string> recurrent_activation;  // LSTM, GRU: "sigmoid"
  bool use_bias = true;
  Initializer kernel_initializer = "glorot_uniform";
  Initializer recurrent_initializer = "orthogonal";
  Initializer bias_initializer = "zeros";
  std::optional<bool> unit_forget_bias;  // LSTM: true (the forget gate's bias starts at 1)
  std::optional<bool> reset_after;       // GRU: true (the reset gate after the recurrent product, cuDNN's way)
  Regularizer kernel_regularizer;
  Regularizer recurrent_regularizer;
  Regularizer bias_regularizer;
  bool return_sequences = false;  // the output of every step (batch, time, units), else the last (batch, units)
  bool return_state = false;      // the final states follow the output (LSTM: h then c)
  bool go_backwards = false;      // the sequence runs last step first (and return_sequences comes reversed)
  bool unroll = false;            // accepted for Keras configs; tower always runs the fused op
  std::string name;
};
using SimpleRNNOptions = RecurrentOptions;
using LSTMOptions = RecurrentOptions;
using GRUOptions = RecurrentOptions;

// inputs: x (batch, time, features) with a known number of time steps, then optionally the initial
// states (Keras's initial_state: h, and c for LSTM), each (batch, units); zeros otherwise.
// -> output (batch, time, units) or (batch, units), then the final states when return_state.
// Weights (Keras's names and layout): <cell>/kernel (features, gates·units),
// <cell>/recurrent_kernel (units, gates·units), <cell>/bias (gates·units,) (GRU with reset_after:
// (2, 3·units), the input bias then the recurrent one), <cell> being "lstm_cell" and so on.
class Recurrent : public Layer {
 public:
  void build(const std::vector<Shape>& input_shapes) override;
  std::vector<SymbolicTensor> call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) override;
  nlohmann::json get_config() const override;
  std::string class_name() const override { return class_name_; }

  std::int64_t units() const { return units_; }
  const RecurrentOptions& options() const { return options_; }

 protected:
  // class_name "LSTM"; gates per unit (1, 4, 3); states carried (1, 2 for LSTM). Checks the options
  // and resolves the optional ones this layer has (their defaults) or refuses those it has not.
  Recurrent(std::string class_name, std::int64_t units, const RecurrentOptions& options, int gates, int states,
            bool has_recurrent_activation, bool has_unit_forget_bias, bool has_reset_after);

  // The cell's fused op on x_proj (time, batch, gates·units), time-major, with the initial states
  // (batch, units) -> {states of every step (time, batch, units), final states...}.
  virtual std::vector<SymbolicTensor> run(CallContext& ctx, const SymbolicTensor& x_proj,
                                          const std::vector<SymbolicTensor>& initial_states) = 0;
  // The bias the input projection adds (gates·units,) (GRU's first row); undefined without bias.
  virtual SymbolicTensor input_bias(CallContext& ctx);
  // The bias weight's shape and initial value (LSTM's unit_forget_bias: ones for the forget gate).
  virtual Shape bias_shape() const;
  virtual Tensor initial_bias() const;

  ops::RecurrentArgs op_args() const;
  std::string weight_name(const char* name) const { return cell_name_ + "/" + name; }
  // The options every recurrent config holds, read from `reader`.
  static RecurrentOptions options_from_config(const ConfigReader& reader);

  std::int64_t units_;
  RecurrentOptions options_;
  int gates_, states_;

 private:
  std::string class_name_, cell_name_;
};

}  // namespace tower::layers
