// GRU: Keras's gated recurrent unit (Cho et al., 2014), gates z, r, h, in both of Keras's variants.
#pragma once

#include "tower/layers/rnn/recurrent.h"

namespace tower::layers {

// x: (batch, time, features) -> (batch, units), or (batch, time, units) with return_sequences; the
// final h follows with return_state. Per step, z and r = recurrent_activation of the input and
// recurrent products' z and r parts; n = activation(x_h + r · (h_{t-1} · recurrent_kernel_h + b_h))
// with reset_after (tf.keras 2's default, cuDNN's form), else activation(x_h + (r h_{t-1}) ·
// recurrent_kernel_h); h_t = z h_{t-1} + (1 - z) n. Weights: gru_cell/kernel (features, 3·units),
// gru_cell/recurrent_kernel (units, 3·units), gru_cell/bias: (2, 3·units) with reset_after (the input
// bias, then the recurrent one), else (3·units,); all in gate order z, r, h.
class GRU : public Recurrent {
 public:
  explicit GRU(std::int64_t units, const GRUOptions& options = {});

  std::shared_ptr<Layer> share() const override { return std::make_shared<GRU>(*this); }
  static LayerPtr from_config(const nlohmann::json& config);
  // Keras 2's CuDNNGRU: a GRU with tanh, sigmoid gates and reset_after, whose files hold cuDNN's
  // weight layout (load_weights converts it, io/rnn_weights.cpp). Saved again, it is a GRU.
  static LayerPtr from_cudnn_config(const nlohmann::json& config);

 protected:
  std::vector<SymbolicTensor> run(CallContext& ctx, const SymbolicTensor& x_proj,
                                  const std::vector<SymbolicTensor>& initial_states, const SymbolicTensor& mask) override;
  std::vector<SymbolicTensor> step(CallContext& ctx, const SymbolicTensor& x_t, const std::vector<SymbolicTensor>& states,
                                   const std::vector<SymbolicTensor>& recurrent_masks) override;
  SymbolicTensor input_bias(CallContext& ctx) override;
  Shape bias_shape() const override;

 private:
  // Row `row` of the (2, 3·units) bias as (3·units,).
  SymbolicTensor bias_row(CallContext& ctx, std::int64_t row);
};

}  // namespace tower::layers
