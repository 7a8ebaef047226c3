// Attention.
#include "tower/layers/attention/attention.h"

#include "tower/core/error.h"
#include "tower/core/ops.h"
#include "tower/core/random.h"
#include "tower/layers/attention/attention_utils.h"
#include "tower/layers/engine/replication.h"
#include "tower/layers/layer_config.h"
#include "tower/layers/layer_utils.h"

namespace tower::layers {

Attention::Attention(const AttentionOptions& options)
    : Attention(options.name, "attention", options.use_scale, options.score_mode, options.dropout, options.seed) {}

Attention::Attention(const std::string& name, const std::string& default_base, bool use_scale, std::string score_mode,
                     double dropout, std::optional<std::uint64_t> seed)
    : Layer(name, default_base), use_scale_(use_scale), score_mode_(std::move(score_mode)), dropout_(dropout),
      seed_(seed ? *seed : next_seed()) {
  if (score_mode_ != "dot" && score_mode_ != "concat")
    raise<ValueError>("{}: score_mode must be \"dot\" or \"concat\", got \"{}\"", describe(*this), score_mode_);
  if (!(dropout >= 0.0 && dropout < 1.0))
    raise<ValueError>("{}: dropout must be in [0, 1), got {}", describe(*this), dropout);
}

LayerPtr Attention::with_call_args(const AttentionCallArgs& args) const {
  LayerPtr handle = share();
  static_cast<Attention&>(*handle).call_args_ = args;
  return handle;
}

std::vector<KerasTensor> Attention::call_multi(const std::vector<KerasTensor>& inputs,
                                               const AttentionCallArgs& args) const {
  return with_call_args(args)->call_multi(inputs);
}

KerasTensor Attention::operator()(const std::vector<KerasTensor>& inputs, const AttentionCallArgs& args) const {
  if (args.return_attention_scores)
    raise<ValueError>("{}: return_attention_scores gives two outputs; use call_multi(inputs, args)", describe(*this));
  return call_multi(inputs, args).at(0);
}

nlohmann::json Attention::call_kwargs() const {
  nlohmann::json kwargs = nlohmann::json::object();
  if (call_args_.return_attention_scores) kwargs["return_attention_scores"] = true;
  if (call_args_.use_causal_mask) kwargs["use_causal_mask"] = true;
  return kwargs;
}

std::vector<KerasTensor> Attention::call_from_config(const std::vector<KerasTensor>& inputs,
                                                     const std::map<std::string, KerasTensor>&,
                                                     const nlohmann::json& kwargs) const {
  AttentionCallArgs args;
  for (const auto& [key, value] : kwargs.items()) {
    if (key == "training") continue;  // dropout follows fit and predict
    if ((key != "return_attention_scores" && key != "use_causal_mask") || !value.is_boolean())
      raise<ValueError>("{}: the call argument {}={} in the model config is not supported (only "
                        "return_attention_scores and use_causal_mask, true or false; masks come from the inputs' "
                        "Keras masks)",
                        describe(*this), key, value.dump().substr(0, 100));
    (key == "use_causal_mask" ? args.use_causal_mask : args.return_attention_scores) = value.get<bool>();
  }
  return call_multi(inputs, args);
}

void Attention::check_inputs(const std::vector<Shape>& shapes) const {
  if (shapes.size() < 2 || shapes.size() > 3)
    raise<ValueError>("{}: must be called on a list [query, value] or [query, value, key], got {} input(s)",
                      describe(*this), shapes.size());
  const Shape& q = shapes[0];
  const Shape& v = shapes[1];
  const Shape& k = shapes.size() > 2 ? shapes[2] : v;
  for (const Shape* s : {&q, &v, &k})
    if (s->rank() != 3)
      raise<ShapeError>("{}: expected query, value and key of shape (batch, time, features), got {}", describe(*this),
                        s->to_string());
  if (v[1] >= 0 && k[1] >= 0 && v[1] != k[1])
    raise<ShapeError>("{}: value {} and key {} need the same number of time steps", describe(*this), v.to_string(),
                      k.to_string());
  if (q[2] >= 0 && k[2] >= 0 && q[2] != k[2])
    raise<ShapeError>("{}: query {} and key {} need the same number of features", describe(*this), q.to_string(),
                      k.to_string());
}

void Attention::build(const std::vector<Shape>& input_shapes) {
  check_inputs(input_shapes);
  if (use_scale_) add_weight("scale", Shape{}, "ones");
  if (score_mode_ == "concat") add_weight("concat_score_weight", Shape{}, "ones");
}

SymbolicTensor Attention::calculate_scores(CallContext& ctx, const SymbolicTensor& query, const SymbolicTensor& key) {
  const VariablePtr scale = weight("scale");
  if (score_mode_ == "dot") {
    SymbolicTensor scores = ops::batch_matmul(query, key, false, true);  // (batch, T_q, T_v)
    return scale ? ops::multiply(scores, ops::cast(read(ctx, scale), scores.dtype())) : scores;
  }
  // concat: (batch, T_q, 1, dim) + (batch, 1, T_v, dim) -> tanh, summed over dim.
  const std::int64_t tq = query.shape()[1], tv = key.shape()[1], dim = query.shape()[2];
  if (tq < 0 || tv < 0)
    raise<ShapeError>("{}: score_mode \"concat\" needs known time steps, got query {} and key {}", describe(*this),
                      query.shape().to_string(), key.shape().to_string());
  SymbolicTensor sum = ops::add(ops::reshape(query, {-1, tq, 1, dim}), ops::reshape(key, {-1, 1, tv, dim}));
  if (scale) sum = ops::multiply(ops::cast(read(ctx, scale), sum.dtype()), sum);
  const SymbolicTensor weight_value = ops::cast(read(ctx, weight("concat_score_weight")), sum.dtype());
  return ops::multiply(weight_value, ops::reduce_sum(ops::tanh(sum), {-1}));
}

std::vector<SymbolicTensor> Attention::call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) {
  std::vector<Shape> shapes;
  for (const auto& x : inputs) shapes.push_back(x.shape());
  check_inputs(shapes);
  const SymbolicTensor& query = inputs[0];                            // (batch, T_q, dim)
  const SymbolicTensor& value = inputs[1];                            // (batch, T_v, dim_v)
  const SymbolicTensor& key = inputs.size() > 2 ? inputs[2] : value;  // (batch, T_v, dim)
  SymbolicTensor scores = calculate_scores(ctx, query, key);          // (batch, T_q, T_v)
  const DType dtype = scores.dtype();
  const std::int64_t tq = query.shape()[1], tv = value.shape()[1];
  auto need_steps = [&](const char* why) {
    if (tq < 0 || tv < 0)
      raise<ShapeError>("{}: {} needs known time steps, got query {} and value {}", describe(*this), why,
                        query.shape().to_string(), value.shape().to_string());
  };

  // Keras's _calculate_score_mask: the value's mask (batch, 1, T_v) and the causal (1, T_q, T_v).
  SymbolicTensor mask;
  if (SymbolicTensor m = input_mask(ctx, 1); m.defined()) {
    need_steps("a value mask");
    mask = ops::reshape(attention_mask_part(m, dtype), {-1, 1, tv});
  }
  if (call_args_.use_causal_mask) {
    need_steps("use_causal_mask");
    const SymbolicTensor causal = ops::reshape(causal_mask(ctx.graph, tq, tv, dtype), {1, tq, tv});
    mask = mask.defined() ? ops::multiply(mask, causal) : causal;
  }
  // Keras's _apply_scores: scores - 1e9 where masked, softmax, dropout, then the weighted values.
  if (mask.defined()) {
    const SymbolicTensor one = ctx.graph.constant(Tensor::scalar(1.0, dtype));
    scores = ops::subtract(scores, ops::scale(ops::subtract(one, mask), 1e9));
  }
  SymbolicTensor distribution = ops::softmax(scores, -1);
  if (ctx.training && dropout_ > 0.0)
    distribution = ops::dropout(distribution, dropout_, seed_, ctx.replica ? ctx.replica->first_row : SymbolicTensor())[0];
  SymbolicTensor output = ops::batch_matmul(distribution, value);  // (batch, T_q, dim_v)
  if (SymbolicTensor m = input_mask(ctx, 0); m.defined()) {  // zero the masked query rows
    need_steps("a query mask");
    output = ops::multiply(output, ops::reshape(attention_mask_part(m, output.dtype()), {-1, tq, 1}));
  }
  if (call_args_.return_attention_scores) return {output, distribution};
  return {output};
}

nlohmann::json Attention::base_fields() const { return {{"use_scale", use_scale_}, {"dropout", dropout_}}; }

nlohmann::json Attention::get_config() const {
  nlohmann::json fields = base_fields();
  fields["score_mode"] = score_mode_;
  return layer_config(*this, fields);
}

LayerPtr Attention::from_config(const nlohmann::json& config) {
  ConfigReader r(config, "Attention");
  r.check_common();
  r.expect("causal", false, "the causal argument of Keras 2.4 (call it with use_causal_mask)");
  AttentionOptions options{.use_scale = r.boolean("use_scale", false),
                           .score_mode = r.string("score_mode", "dot"),
                           .dropout = r.number("dropout", 0.0),
                           .name = r.name()};
  if (r.has("seed")) options.seed = static_cast<std::uint64_t>(r.integer("seed"));
  return r.finish(Attention(options));
}

}  // namespace tower::layers
