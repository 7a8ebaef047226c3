// LSTM: Keras's long short-term memory layer (Hochreiter & Schmidhuber, 1997), gates i, f, c, o.
#pragma once

#include "tower/layers/rnn/recurrent.h"

namespace tower::layers {

// x: (batch, time, features) -> (batch, units), or (batch, time, units) with return_sequences; the
// final h and c follow with return_state, and initial_state is [h, c]. Per step, z = x_t · kernel +
// h_{t-1} · recurrent_kernel + bias split into i, f, c, o: c_t = f c_{t-1} + i activation(z_c),
// h_t = o activation(c_t), the gates through recurrent_activation. Weights: lstm_cell/kernel
// (features, 4·units), lstm_cell/recurrent_kernel (units, 4·units), lstm_cell/bias (4·units,), each in
// gate order i, f, c, o; unit_forget_bias starts the f part of the bias at 1.
class LSTM : public Recurrent {
 public:
  explicit LSTM(std::int64_t units, const LSTMOptions& options = {});

  std::shared_ptr<Layer> share() const override { return std::make_shared<LSTM>(*this); }
  static LayerPtr from_config(const nlohmann::json& config);
  // Keras 2's CuDNNLSTM: an LSTM with tanh and sigmoid gates, whose files hold cuDNN's weight layout
  // (load_weights converts it, io/rnn_weights.cpp). Saved again, it is an LSTM.
  static LayerPtr from_cudnn_config(const nlohmann::json& config);

 protected:
  std::vector<SymbolicTensor> run(CallContext& ctx, const SymbolicTensor& x_proj,
                                  const std::vector<SymbolicTensor>& initial_states, const SymbolicTensor& mask) override;
  std::vector<SymbolicTensor> step(CallContext& ctx, const SymbolicTensor& x_t, const std::vector<SymbolicTensor>& states,
                                   const std::vector<SymbolicTensor>& recurrent_masks) override;
  Tensor initial_bias() const override;
};

}  // namespace tower::layers
