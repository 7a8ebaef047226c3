// SimpleRNN.
#include "tower/layers/rnn/simple_rnn.h"

#include "tower/layers/layer_config.h"

namespace tower::layers {

SimpleRNN::SimpleRNN(std::int64_t units, const SimpleRNNOptions& options)
    : Recurrent("SimpleRNN", units, options, /*gates=*/1, /*states=*/1, false, false, false) {}

std::vector<SymbolicTensor> SimpleRNN::run(CallContext& ctx, const SymbolicTensor& x_proj,
                                           const std::vector<SymbolicTensor>& initial_states, const SymbolicTensor& mask) {
  return ops::simple_rnn(x_proj, read(ctx, weight(weight_name("recurrent_kernel"))), initial_states[0], mask,
                         op_args());
}

// h_t = activation(x_t + (h_{t-1} m) · recurrent_kernel).
std::vector<SymbolicTensor> SimpleRNN::step(CallContext& ctx, const SymbolicTensor& x_t,
                                            const std::vector<SymbolicTensor>& states,
                                            const std::vector<SymbolicTensor>& recurrent_masks) {
  const SymbolicTensor recurrent_kernel = read(ctx, weight(weight_name("recurrent_kernel")));
  return {activate(ops::add(x_t, ops::matmul(ops::multiply(states[0], recurrent_masks[0]), recurrent_kernel)))};
}

LayerPtr SimpleRNN::from_config(const nlohmann::json& config) {
  ConfigReader r(config, "SimpleRNN");
  return r.finish(SimpleRNN(r.integer("units"), options_from_config(r)));
}

}  // namespace tower::layers
