// SimpleRNN.
#include "tower/layers/rnn/simple_rnn.h"

#include "tower/layers/layer_config.h"

namespace tower::layers {

SimpleRNN::SimpleRNN(std::int64_t units, const SimpleRNNOptions& options)
    : Recurrent("SimpleRNN", units, options, /*gates=*/1, /*states=*/1, false, false, false) {}

std::vector<SymbolicTensor> SimpleRNN::run(CallContext& ctx, const SymbolicTensor& x_proj,
                                           const std::vector<SymbolicTensor>& initial_states) {
  return ops::simple_rnn(x_proj, read(ctx, weight(weight_name("recurrent_kernel"))), initial_states[0], {}, op_args());
}

LayerPtr SimpleRNN::from_config(const nlohmann::json& config) {
  ConfigReader r(config, "SimpleRNN");
  return r.finish(SimpleRNN(r.integer("units"), options_from_config(r)));
}

}  // namespace tower::layers
