// LSTM.
#include "tower/layers/rnn/lstm.h"

#include <algorithm>

#include "tower/layers/layer_config.h"

namespace tower::layers {

LSTM::LSTM(std::int64_t units, const LSTMOptions& options)
    : Recurrent("LSTM", units, options, /*gates=*/4, /*states=*/2, true, true, false) {}

std::vector<SymbolicTensor> LSTM::run(CallContext& ctx, const SymbolicTensor& x_proj,
                                      const std::vector<SymbolicTensor>& initial_states, const SymbolicTensor& mask) {
  auto r = ops::lstm(x_proj, read(ctx, weight(weight_name("recurrent_kernel"))), initial_states[0], initial_states[1],
                     mask, op_args());
  return {r[0], r[3], r[4]};  // h states, final h, final c
}

// Keras's implementation 1: each gate multiplies its own dropped copy of h_{t-1}.
std::vector<SymbolicTensor> LSTM::step(CallContext& ctx, const SymbolicTensor& x_t,
                                       const std::vector<SymbolicTensor>& states,
                                       const std::vector<SymbolicTensor>& recurrent_masks) {
  const SymbolicTensor recurrent_kernel = read(ctx, weight(weight_name("recurrent_kernel")));
  auto z = [&](int g) {  // x_g + (h m_g) · recurrent_kernel_g
    return ops::add(gate_columns(x_t, g), ops::matmul(ops::multiply(states[0], recurrent_masks[g]),
                                                      gate_columns(recurrent_kernel, g)));
  };
  const SymbolicTensor i = activate_gate(z(0)), f = activate_gate(z(1)), g = activate(z(2)), o = activate_gate(z(3));
  const SymbolicTensor c = ops::add(ops::multiply(f, states[1]), ops::multiply(i, g));
  return {ops::multiply(o, activate(c)), c};
}

Tensor LSTM::initial_bias() const {
  return *options_.unit_forget_bias ? lstm_bias_with_unit_forget(options_.bias_initializer, units_)
                                    : Recurrent::initial_bias();
}

LayerPtr LSTM::from_config(const nlohmann::json& config) {
  ConfigReader r(config, "LSTM");
  LSTMOptions options = options_from_config(r);
  // Absent only in Keras 1 and 2.0-2.2 configs, whose default was hard_sigmoid.
  options.recurrent_activation = r.has("recurrent_activation") ? r.activation("recurrent_activation") : "hard_sigmoid";
  options.unit_forget_bias = r.boolean("unit_forget_bias", true);
  return r.finish(LSTM(r.integer("units"), options));
}

LayerPtr LSTM::from_cudnn_config(const nlohmann::json& config) {
  ConfigReader r(config, "CuDNNLSTM");
  LSTMOptions options = options_from_config(r);
  options.recurrent_activation = "sigmoid";
  options.unit_forget_bias = r.boolean("unit_forget_bias", true);
  return r.finish(LSTM(r.integer("units"), options));
}

}  // namespace tower::layers
