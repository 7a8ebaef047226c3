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
                                     const std::vector<SymbolicTensor>& initial_states, const SymbolicTensor& mask) {
  // The fused op adds a recurrent bias inside the cell: the second bias row, else zeros.
  const SymbolicTensor recurrent_bias = options_.use_bias && *options_.reset_after
                                            ? bias_row(ctx, 1)
                                            : ctx.graph.constant(Tensor::zeros(Shape{3 * units_}, x_proj.dtype()));
  auto r = ops::gru(x_proj, read(ctx, weight(weight_name("recurrent_kernel"))), recurrent_bias, initial_states[0], mask,
                    op_args());
  return {r[0], r[2]};  // states, final h
}

// Keras's implementation 1: z, r and the candidate each multiply their own dropped copy of h_{t-1};
// the update mixes the undropped one.
std::vector<SymbolicTensor> GRU::step(CallContext& ctx, const SymbolicTensor& x_t,
                                      const std::vector<SymbolicTensor>& states,
                                      const std::vector<SymbolicTensor>& recurrent_masks) {
  const SymbolicTensor& h = states[0];
  const SymbolicTensor recurrent_kernel = read(ctx, weight(weight_name("recurrent_kernel")));
  const bool bias = options_.use_bias && *options_.reset_after;  // the recurrent bias row
  auto q = [&](int g, const SymbolicTensor& hg) {  // hg · recurrent_kernel_g (+ recurrent bias_g)
    SymbolicTensor product = ops::matmul(hg, gate_columns(recurrent_kernel, g));
    return bias ? ops::add(product, ops::slice(bias_row(ctx, 1), {g * units_}, {units_})) : product;
  };
  auto dropped = [&](int g) { return ops::multiply(h, recurrent_masks[static_cast<std::size_t>(g)]); };
  const SymbolicTensor z = activate_gate(ops::add(gate_columns(x_t, 0), q(0, dropped(0))));
  const SymbolicTensor r = activate_gate(ops::add(gate_columns(x_t, 1), q(1, dropped(1))));
  const SymbolicTensor candidate = *options_.reset_after ? ops::multiply(r, q(2, dropped(2))) : q(2, ops::multiply(r, dropped(2)));
  const SymbolicTensor n = activate(ops::add(gate_columns(x_t, 2), candidate));
  return {ops::add(ops::multiply(z, h), ops::multiply(ops::subtract(ops::ones_like(z), z), n))};
}

LayerPtr GRU::from_config(const nlohmann::json& config) {
  ConfigReader r(config, "GRU");
  GRUOptions options = options_from_config(r);
  // Absent only in Keras 1 and 2.0-2.2 configs, whose defaults were hard_sigmoid and reset_after false.
  options.recurrent_activation = r.has("recurrent_activation") ? r.activation("recurrent_activation") : "hard_sigmoid";
  options.reset_after = r.boolean("reset_after", false);
  return r.finish(GRU(r.integer("units"), options));
}

LayerPtr GRU::from_cudnn_config(const nlohmann::json& config) {
  ConfigReader r(config, "CuDNNGRU");
  GRUOptions options = options_from_config(r);
  options.recurrent_activation = "sigmoid";
  options.reset_after = true;
  return r.finish(GRU(r.integer("units"), options));
}

}  // namespace tower::layers
