// Recurrent: the base of SimpleRNN, LSTM and GRU (Keras's RNN with one of its built-in cells): the
// arguments they share, their weights, and the call that runs the cell's fused op over the sequence.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tower/core/ops.h"
#include "tower/layers/constraints.h"
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
  Constraint kernel_constraint;  // applied after each optimizer update
  Constraint recurrent_constraint;
  Constraint bias_constraint;
  bool return_sequences = false;  // the output of every step (batch, time, units), else the last (batch, units)
  bool return_state = false;      // the final states follow the output (LSTM: h then c)
  bool go_backwards = false;      // the sequence runs last step first (and return_sequences comes reversed)
  bool unroll = false;            // accepted for Keras configs; tower always runs the fused op
  // Training only. dropout: the fraction of the input features dropped, one mask per sequence (one per
  // gate with recurrent_dropout, as Keras). recurrent_dropout: the fraction of h_{t-1} dropped before
  // the recurrent kernel, one mask per sequence and gate; the cell then runs step by step with
  // ordinary ops instead of the fused op (slower, as in Keras, which leaves cuDNN for it).
  double dropout = 0.0;
  double recurrent_dropout = 0.0;
  std::optional<std::uint64_t> seed;  // the dropout masks' (drawn from the global seed when unset)
  // The final states of a batch are the next batch's initial states (Keras's stateful): needs a fixed
  // batch size (Input's batch_size); reset_states() zeroes them. The states are not weights.
  bool stateful = false;
  // With a mask and return_sequences: the masked steps' outputs are zeros rather than the last
  // unmasked step's (Keras's zero_output_for_mask; Bidirectional sets it).
  bool zero_output_for_mask = false;
  std::string name;
};
using SimpleRNNOptions = RecurrentOptions;
using LSTMOptions = RecurrentOptions;
using GRUOptions = RecurrentOptions;

// An LSTM's initial bias (4·units,) with unit_forget_bias, as Keras makes it: `bias_initializer` for
// the i gate, ones for f, `bias_initializer` for c and o (LSTM, ConvLSTM2D).
Tensor lstm_bias_with_unit_forget(const Initializer& bias_initializer, std::int64_t units);

// `count` dropout masks of `rate` shaped like `ones` (0 or 1 / (1 - rate)), one per sequence: the
// k-th is seeded seed + first + k; a replica draws its rows of the whole batch's (Recurrent, ConvLSTM2D).
std::vector<SymbolicTensor> recurrent_dropout_masks(CallContext& ctx, const SymbolicTensor& ones, double rate,
                                                    std::uint64_t seed, int count, int first);

// The initial states of a stateful recurrent layer: `count` non-trainable variables (batch, state_dims...)
// of zeros, made in `variables` on first use (the batch from the layer's Input, which must fix it),
// read in ctx.graph. Refuses replicated calls (Recurrent, ConvLSTM2D).
std::vector<SymbolicTensor> stateful_initial_states(CallContext& ctx, const Layer& layer,
                                                    std::vector<VariablePtr>& variables, int count,
                                                    const std::vector<std::int64_t>& state_dims, DType dtype);

// inputs: x (batch, time, features), time known or not (recurrent_dropout in training needs it
// known: it unrolls the steps), then optionally the initial states (Keras's initial_state: h, and c
// for LSTM), each (batch, units); zeros otherwise. With a Keras mask on x (Masking,
// Embedding(mask_zero)), a masked step leaves the states as they were; the output sequence keeps the
// mask.
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
  // Keras's layer.states of a stateful layer (h, and c for LSTM; (batch, units) each), empty before
  // it is built or when not stateful.
  std::vector<VariablePtr> states() const { return *state_variables_; }
  void reset_states() override;
  // The output sequence keeps x's mask (return_sequences); the final states have none.
  std::vector<SymbolicTensor> compute_mask(const std::vector<SymbolicTensor>& inputs,
                                           const std::vector<SymbolicTensor>& masks) const override;

 protected:
  // class_name "LSTM"; gates per unit (1, 4, 3); states carried (1, 2 for LSTM). Checks the options
  // and resolves the optional ones this layer has (their defaults) or refuses those it has not.
  Recurrent(std::string class_name, std::int64_t units, const RecurrentOptions& options, int gates, int states,
            bool has_recurrent_activation, bool has_unit_forget_bias, bool has_reset_after);

  // The cell's fused op on x_proj (time, batch, gates·units), time-major, with the initial states
  // (batch, units) and the mask (batch, time) in x_proj's dtype (undefined: none) -> {states of every
  // step (time, batch, units), final states...}.
  virtual std::vector<SymbolicTensor> run(CallContext& ctx, const SymbolicTensor& x_proj,
                                          const std::vector<SymbolicTensor>& initial_states,
                                          const SymbolicTensor& mask) = 0;
  // One step of the cell with ordinary ops (recurrent dropout): x_t (batch, gates·units), the states
  // before it, and h_{t-1}'s dropout mask per gate (batch, units) -> the states after it (h first).
  virtual std::vector<SymbolicTensor> step(CallContext& ctx, const SymbolicTensor& x_t,
                                           const std::vector<SymbolicTensor>& states,
                                           const std::vector<SymbolicTensor>& recurrent_masks) = 0;
  // The bias the input projection adds (gates·units,) (GRU's first row); undefined without bias.
  virtual SymbolicTensor input_bias(CallContext& ctx);
  // The bias weight's shape and initial value (LSTM's unit_forget_bias: ones for the forget gate).
  virtual Shape bias_shape() const;
  virtual Tensor initial_bias() const;

  ops::RecurrentArgs op_args() const;
  // activation / recurrent_activation applied with ordinary ops (step()).
  SymbolicTensor activate(const SymbolicTensor& x) const;
  SymbolicTensor activate_gate(const SymbolicTensor& x) const;
  // Column block `gate` (units wide) of a (rows, gates·units) tensor.
  SymbolicTensor gate_columns(const SymbolicTensor& x, std::int64_t gate) const;
  std::string weight_name(const char* name) const { return cell_name_ + "/" + name; }
  // The options every recurrent config holds, read from `reader`.
  static RecurrentOptions options_from_config(const ConfigReader& reader);

  std::int64_t units_;
  RecurrentOptions options_;
  int gates_, states_;

 private:
  // x (batch, time, features) -> x_proj (time, batch, gates·units), with input dropout in training.
  SymbolicTensor project(CallContext& ctx, const SymbolicTensor& x);
  // `count` dropout masks (batch, width) of `rate`, 0 or 1 / (1 - rate), for ones like `ones`; the
  // k-th mask of `first` on is seeded seed_ + first + k.
  std::vector<SymbolicTensor> dropout_masks(CallContext& ctx, const SymbolicTensor& ones, double rate, int count,
                                            int first) const;
  // The steps one by one with step().
  std::vector<SymbolicTensor> run_unrolled(CallContext& ctx, const SymbolicTensor& x_proj,
                                           std::vector<SymbolicTensor> states,
                                           const std::vector<SymbolicTensor>& recurrent_masks, const SymbolicTensor& mask,
                                           std::int64_t time);
  // The initial states of a stateful layer: its state variables (made here on first use).
  std::vector<SymbolicTensor> stateful_initial(CallContext& ctx, const SymbolicTensor& x);

  std::string class_name_, cell_name_;
  std::uint64_t seed_;
  bool seed_given_;
  // Shared by every handle of the layer, as its weights are.
  std::shared_ptr<std::vector<VariablePtr>> state_variables_ = std::make_shared<std::vector<VariablePtr>>();
};

}  // namespace tower::layers
