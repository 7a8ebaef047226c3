// AdditiveAttention.
#include "tower/layers/attention/additive_attention.h"

#include "tower/core/error.h"
#include "tower/core/ops.h"
#include "tower/layers/layer_config.h"
#include "tower/layers/layer_utils.h"

namespace tower::layers {

AdditiveAttention::AdditiveAttention(const AdditiveAttentionOptions& options)
    : Attention(options.name, "additive_attention", options.use_scale, "dot", options.dropout, options.seed) {}

void AdditiveAttention::build(const std::vector<Shape>& input_shapes) {
  check_inputs(input_shapes);
  expect_known_dim(*this, input_shapes[0], -1, "query features (last)");
  if (use_scale_) add_weight("scale", Shape{input_shapes[0].dim(-1)}, "glorot_uniform");  // (dim,)
}

SymbolicTensor AdditiveAttention::calculate_scores(CallContext& ctx, const SymbolicTensor& query,
                                                   const SymbolicTensor& key) {
  // (batch, T_q, 1, dim) + (batch, 1, T_v, dim) -> tanh, weighed by scale, summed over dim.
  const std::int64_t tq = query.shape()[1], tv = key.shape()[1], dim = query.shape()[2];
  if (tq < 0 || tv < 0)
    raise<ShapeError>("{}: needs known time steps, got query {} and key {}", describe(*this), query.shape().to_string(),
                      key.shape().to_string());
  SymbolicTensor t = ops::tanh(ops::add(ops::reshape(query, {-1, tq, 1, dim}), ops::reshape(key, {-1, 1, tv, dim})));
  if (const VariablePtr scale = weight("scale")) {
    if (scale->shape()[0] != dim)
      raise<ShapeError>("{}: built for {} query features, got query {}", describe(*this), scale->shape()[0],
                        query.shape().to_string());
    t = ops::multiply(t, ops::cast(read(ctx, scale), t.dtype()));
  }
  return ops::reduce_sum(t, {-1});
}

nlohmann::json AdditiveAttention::get_config() const { return layer_config(*this, base_fields()); }

LayerPtr AdditiveAttention::from_config(const nlohmann::json& config) {
  ConfigReader r(config, "AdditiveAttention");
  r.check_common();
  r.expect("causal", false, "the causal argument of Keras 2.4 (call it with use_causal_mask)");
  r.expect("score_mode", "dot", "a score_mode (AdditiveAttention's scores are additive)");
  AdditiveAttentionOptions options{.use_scale = r.boolean("use_scale", true), .dropout = r.number("dropout", 0.0),
                                   .name = r.name()};
  if (r.has("seed")) options.seed = static_cast<std::uint64_t>(r.integer("seed"));
  return r.finish(AdditiveAttention(options));
}

}  // namespace tower::layers
