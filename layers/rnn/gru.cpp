// GRU.
#include "tower/layers/rnn/gru.h"

#include "tower/layers/layer_config.h"

namespace tower::layers {

GRU::GRU(std::int64_t units, const GRUOptions& options)
    : Recurrent("GRU", units, options, /*gates=*/3, /*states=*/1, true, false, true) {}

Shape GRU::bias_shape() const { return *options_.reset_after ? Shape{2, 3 * units_} : Shape{3 * units_}; }

SymbolicTensor GRU::bias_row(CallContext& ctx, std::int64_t row) {
  return ops::reshape(ops::slice(read(ctx, weight(weight_name("bias"))), {row, 0}, {1, -1}), {3 * units_});
}

SymbolicTensor GRU::input_bias(CallContext& ctx) {
  if (!options_.use_bias || !*options_.reset_after) return Recurrent::input_bias(ctx);
  return bias_row(ctx, 0);
}

std::vector<SymbolicTensor> GRU::run(CallContext& ctx, const SymbolicTensor& x_proj,
                                     const std::vector<SymbolicTensor>& initial_states) {
  // The fused op adds a recurrent bias inside the cell: the second bias row, else zeros.
  const SymbolicTensor recurrent_bias = options_.use_bias && *options_.reset_after
                                            ? bias_row(ctx, 1)
                                            : ctx.graph.constant(Tensor::zeros(Shape{3 * units_}, x_proj.dtype()));
  auto r = ops::gru(x_proj, read(ctx, weight(weight_name("recurrent_kernel"))), recurrent_bias, initial_states[0], {},
                    op_args());
  return {r[0], r[2]};  // states, final h
}

LayerPtr GRU::from_config(const nlohmann::json& config) {
  ConfigReader r(config, "GRU");
  GRUOptions options = options_from_config(r);
  options.recurrent_activation = r.has("recurrent_activation") ? r.activation("recurrent_activation") : "sigmoid";
  options.reset_after = r.boolean("reset_after", true);
  return r.finish(GRU(r.integer("units"), options));
}

}  // namespace tower::layers
