// SimpleRNN: h_t = activation(x_t · kernel + h_{t-1} · recurrent_kernel + bias), Keras's fully
// connected recurrent layer.
#pragma once

#include "tower/layers/rnn/recurrent.h"

namespace tower::layers {

// x: (batch, time, features) -> (batch, units), or (batch, time, units) with return_sequences; the
// final h follows with return_state. Weights: simple_rnn_cell/kernel (features, units),
// simple_rnn_cell/recurrent_kernel (units, units), simple_rnn_cell/bias (units,).
class SimpleRNN : public Recurrent {
 public:
  explicit SimpleRNN(std::int64_t units, const SimpleRNNOptions& options = {});

  std::shared_ptr<Layer> share() const override { return std::make_shared<SimpleRNN>(*this); }
  static LayerPtr from_config(const nlohmann::json& config);

 protected:
  std::vector<SymbolicTensor> run(CallContext& ctx, const SymbolicTensor& x_proj,
                                  const std::vector<SymbolicTensor>& initial_states, const SymbolicTensor& mask) override;
  std::vector<SymbolicTensor> step(CallContext& ctx, const SymbolicTensor& x_t, const std::vector<SymbolicTensor>& states,
                                   const std::vector<SymbolicTensor>& recurrent_masks) override;
};

}  // namespace tower::layers
