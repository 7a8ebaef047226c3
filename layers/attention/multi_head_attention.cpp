// MultiHeadAttention.
#include "tower/layers/attention/multi_head_attention.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "tower/core/error.h"
#include "tower/core/ops.h"
#include "tower/core/random.h"
#include "tower/layers/attention/attention_utils.h"
#include "tower/layers/engine/replication.h"
#include "tower/layers/layer_config.h"
#include "tower/layers/layer_utils.h"

namespace tower::layers {

namespace {

std::int64_t product(const std::vector<std::int64_t>& dims) {
  return std::accumulate(dims.begin(), dims.end(), std::int64_t{1}, std::multiplies<>());
}

}  // namespace

MultiHeadAttention::MultiHeadAttention(std::int64_t num_heads, std::int64_t key_dim,
                                       const MultiHeadAttentionOptions& options)
    : Layer(options.name, "multi_head_attention"), num_heads_(num_heads), key_dim_(key_dim), options_(options),
      seed_(options.seed ? *options.seed : next_seed()) {
  if (num_heads <= 0) raise<ValueError>("{}: num_heads must be positive, got {}", describe(*this), num_heads);
  if (key_dim <= 0) raise<ValueError>("{}: key_dim must be positive, got {}", describe(*this), key_dim);
  if (options.value_dim < 0)
    raise<ValueError>("{}: value_dim must be positive (or 0 for key_dim), got {}", describe(*this), options.value_dim);
  if (!(options.dropout >= 0.0 && options.dropout < 1.0))
    raise<ValueError>("{}: dropout must be in [0, 1), got {}", describe(*this), options.dropout);
  for (auto d : options.output_shape)
    if (d <= 0) raise<ValueError>("{}: output_shape must hold positive sizes, got {}", describe(*this), d);
  if (!(options.attention_axes.empty() ||
        (options.attention_axes.size() == 1 && (options.attention_axes[0] == 1 || options.attention_axes[0] == -2))))
    raise<ValueError>(
        "{}: only attention over the sequence axis is supported (attention_axes None, [1] or [-2]) on inputs "
        "(batch, time, features); for attention over other axes, reshape them into the time axis first",
        describe(*this));
}

LayerPtr MultiHeadAttention::with_call_args(const MultiHeadAttentionCallArgs& args) const {
  auto handle = std::make_shared<MultiHeadAttention>(*this);
  handle->return_attention_scores_ = args.return_attention_scores;
  handle->use_causal_mask_ = args.use_causal_mask;
  return handle;
}

std::vector<KerasTensor> MultiHeadAttention::call_multi(const KerasTensor& query, const KerasTensor& value,
                                                        const MultiHeadAttentionCallArgs& args) const {
  std::vector<KerasTensor> inputs{query, value};
  if (args.key.defined() || args.attention_mask.defined()) inputs.push_back(args.key.defined() ? args.key : value);
  if (args.attention_mask.defined()) inputs.push_back(args.attention_mask);
  return with_call_args(args)->call_multi(inputs);
}

KerasTensor MultiHeadAttention::operator()(const KerasTensor& query, const KerasTensor& value,
                                           const MultiHeadAttentionCallArgs& args) const {
  if (args.return_attention_scores)
    raise<ValueError>("{}: return_attention_scores gives two outputs; use call_multi(query, value, args)",
                      describe(*this));
  return call_multi(query, value, args).at(0);
}

nlohmann::json MultiHeadAttention::call_kwargs() const {
  nlohmann::json kwargs = nlohmann::json::object();
  if (return_attention_scores_) kwargs["return_attention_scores"] = true;
  if (use_causal_mask_) kwargs["use_causal_mask"] = true;
  return kwargs;
}

std::vector<KerasTensor> MultiHeadAttention::call_from_config(const std::vector<KerasTensor>& inputs,
                                                              const std::map<std::string, KerasTensor>& keyword_inputs,
                                                              const nlohmann::json& kwargs) const {
  // Keras's call(query, value, key=None, attention_mask=None, ...), by position or by keyword.
  const std::vector<std::string> names{"query", "value", "key", "attention_mask"};
  if (inputs.size() > names.size())
    raise<ValueError>("{}: a call in the model config passes {} tensors; expected query, value, key and "
                      "attention_mask at most",
                      describe(*this), inputs.size());
  std::vector<KerasTensor> tensors(names.size());
  std::copy(inputs.begin(), inputs.end(), tensors.begin());
  for (const auto& [key, tensor] : keyword_inputs) {
    const auto at = static_cast<std::size_t>(std::find(names.begin(), names.end(), key) - names.begin());
    if (at == names.size() || tensors[at].defined())
      raise<ValueError>("{}: the model config passes \"{}\" twice or as an unknown argument", describe(*this), key);
    tensors[at] = tensor;
  }
  if (!tensors[1].defined())
    raise<ValueError>("{}: a call in the model config has no value tensor", describe(*this));
  MultiHeadAttentionCallArgs args{.key = tensors[2], .attention_mask = tensors[3]};
  for (const auto& [key, value] : kwargs.items()) {
    if (key == "training") continue;  // dropout follows fit and predict
    if ((key != "return_attention_scores" && key != "use_causal_mask") || !value.is_boolean())
      raise<ValueError>("{}: the call argument {}={} in the model config is not supported (only "
                        "return_attention_scores and use_causal_mask, true or false)",
                        describe(*this), key, value.dump());
    (key == "use_causal_mask" ? args.use_causal_mask : args.return_attention_scores) = value.get<bool>();
  }
  return call_multi(tensors[0], tensors[1], args);
}

void MultiHeadAttention::build(const std::vector<Shape>& input_shapes) {
  if (input_shapes.size() < 2 || input_shapes.size() > 4)
    raise<ValueError>("{}: expected inputs [query, value], [query, value, key] or [query, value, key, "
                      "attention_mask], got {}",
                      describe(*this), input_shapes.size());
  const Shape& q = input_shapes[0];
  const Shape& v = input_shapes[1];
  const Shape& k = input_shapes.size() > 2 ? input_shapes[2] : v;
  for (const auto& [shape, what] : {std::pair{&q, "query"}, {&v, "value"}, {&k, "key"}}) {
    expect_input_rank(*this, *shape, 3, what == std::string("query") ? "(batch, T_q, features)" : "(batch, T_v, features)");
    expect_known_dim(*this, *shape, -1, "features (last)");
  }
  if (v[1] != k[1])
    raise<ShapeError>("{}: value {} and key {} must have the same shape except the last axis", describe(*this),
                      v.to_string(), k.to_string());
  const std::int64_t n = num_heads_, h = key_dim_, hv = value_dim();
  const std::vector<std::int64_t> out =
      options_.output_shape.empty() ? std::vector<std::int64_t>{q.dim(-1)} : options_.output_shape;
  const Regularizer& kr = options_.kernel_regularizer;
  const Regularizer& br = options_.bias_regularizer;
  const Initializer& ki = options_.kernel_initializer;
  const Initializer& bi = options_.bias_initializer;
  const bool bias = options_.use_bias;
  add_weight("query/kernel", {q.dim(-1), n, h}, ki, kr);  // (d_q, N, H)
  if (bias) add_weight("query/bias", {n, h}, bi, br);     // (N, H)
  add_weight("key/kernel", {k.dim(-1), n, h}, ki, kr);     // (d_k, N, H)
  if (bias) add_weight("key/bias", {n, h}, bi, br);
  add_weight("value/kernel", {v.dim(-1), n, hv}, ki, kr);  // (d_v, N, H_v)
  if (bias) add_weight("value/bias", {n, hv}, bi, br);     // (N, H_v)
  std::vector<std::int64_t> kernel_dims{n, hv};
  kernel_dims.insert(kernel_dims.end(), out.begin(), out.end());
  add_weight("attention_output/kernel", Shape(kernel_dims), ki, kr);  // (N, H_v, out...)
  if (bias) add_weight("attention_output/bias", Shape(out), bi, br);  // (out...)
  *build_shapes_ = {q, v, k};
}

std::vector<SymbolicTensor> MultiHeadAttention::call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) {
  if (inputs.size() < 2 || inputs.size() > 4)
    raise<ValueError>("{}: expected inputs [query, value], [query, value, key] or [query, value, key, "
                      "attention_mask], got {}",
                      describe(*this), inputs.size());
  const SymbolicTensor& query = inputs[0];                              // (batch, T, d_q)
  const SymbolicTensor& value = inputs[1];                              // (batch, S, d_v)
  const SymbolicTensor& key = inputs.size() > 2 ? inputs[2] : value;    // (batch, S, d_k)
  for (const SymbolicTensor* x : {&query, &value, &key})
    if (x->rank() != 3 || x->shape()[1] < 0)
      raise<ShapeError>("{}: expected query, value and key of shape (batch, time, features) with known time steps, "
                        "got {}",
                        describe(*this), x->shape().to_string());
  const std::int64_t t = query.shape()[1], s = value.shape()[1];
  if (key.shape()[1] != s)
    raise<ShapeError>("{}: value {} and key {} must have the same number of time steps", describe(*this),
                      value.shape().to_string(), key.shape().to_string());
  const std::int64_t n = num_heads_, h = key_dim_, hv = value_dim();
  const bool bias = options_.use_bias;

  // Keras's EinsumDense "abc,cde->abde": the rows (batch·time, d) times the kernel (d, N·h) plus the
  // bias (N·h,), as (batch, time, N, h).
  auto project = [&](const SymbolicTensor& x, const std::string& name, std::int64_t head_size) {
    const VariablePtr kernel = weight(name + "/kernel");
    const std::int64_t d = kernel->shape()[0];
    if (x.shape().dim(-1) != d)
      raise<ShapeError>("{}: the {} projection was built for {} features, got input {}", describe(*this), name, d,
                        x.shape().to_string());
    const std::int64_t steps = x.shape()[1];
    const SymbolicTensor rows = ops::reshape(x, {-1, d});                                  // (batch·time, d)
    const SymbolicTensor w = ops::reshape(read(ctx, kernel), {d, n * head_size});         // (d, N·h)
    const SymbolicTensor y = bias ? ops::dense(rows, w, ops::reshape(read(ctx, weight(name + "/bias")), {n * head_size}))
                                  : ops::matmul(rows, w);                                  // (batch·time, N·h)
    return ops::reshape(y, {-1, steps, n, head_size});                                     // (batch, time, N, h)
  };
  const SymbolicTensor q = project(query, "query", h), k = project(key, "key", h), v = project(value, "value", hv);
  const double scale = 1.0 / std::sqrt(static_cast<double>(h));

  // The attention mask, rank 4 to broadcast over the heads: Keras's _compute_attention_mask.
  const DType dtype = q.dtype();
  SymbolicTensor mask;  // (batch or 1, 1 or N, T, S), 1 = attend
  auto combine = [&](const SymbolicTensor& m) { mask = mask.defined() ? ops::multiply(mask, m) : m; };
  if (SymbolicTensor m = input_mask(ctx, 0); m.defined()) combine(ops::reshape(attention_mask_part(m, dtype), {-1, 1, t, 1}));
  if (SymbolicTensor m = input_mask(ctx, 1); m.defined()) combine(ops::reshape(attention_mask_part(m, dtype), {-1, 1, 1, s}));
  if (SymbolicTensor m = input_mask(ctx, 2); m.defined() && inputs.size() > 2)
    combine(ops::reshape(attention_mask_part(m, dtype), {-1, 1, 1, s}));
  if (use_causal_mask_) combine(ops::reshape(causal_mask(ctx.graph, t, s, dtype), {1, 1, t, s}));
  if (inputs.size() == 4) {
    const SymbolicTensor& explicit_mask = inputs[3];
    const Shape& ms = explicit_mask.shape();
    const bool rank3 = ms.rank() == 3 && ms[1] == t && ms[2] == s;
    const bool rank4 = ms.rank() == 4 && (ms[1] == 1 || ms[1] == n) && ms[2] == t && ms[3] == s;
    if (!rank3 && !rank4)
      raise<ShapeError>("{}: attention_mask must be (batch, {}, {}) or (batch, {}, {}, {}) (T_q, T_v), got {}",
                        describe(*this), t, s, n, t, s, ms.to_string());
    const SymbolicTensor m = attention_mask_part(explicit_mask, dtype);
    combine(rank3 ? ops::reshape(m, {-1, 1, t, s}) : m);
  }

  // Keras 3 zeroes the masked probabilities only on its Softmax-layer path (dropout or scores returned);
  // without either, the products and softmax are one op (dot_product_attention).
  const bool softmax_layer_path = options_.dropout > 0.0 || return_attention_scores_;
  SymbolicTensor probabilities, context;  // (batch, N, T, S); (batch·T, N·H_v)
  if (softmax_layer_path) {
    const auto heads_first = [](const SymbolicTensor& x) { return ops::transpose(x, {0, 2, 1, 3}); };  // (batch, N, time, h)
    // Keras scales the projected query by 1 / sqrt(key_dim) before the product.
    const SymbolicTensor scores = ops::batch_matmul(ops::scale(heads_first(q), scale), heads_first(k), false, true);
    probabilities = masked_softmax(scores, mask);
    SymbolicTensor attended = probabilities;
    if (ctx.training && options_.dropout > 0.0)
      attended = ops::dropout(probabilities, options_.dropout, seed_, ctx.replica ? ctx.replica->first_row : SymbolicTensor())[0];
    context = ops::reshape(ops::transpose(ops::batch_matmul(attended, heads_first(v)), {0, 2, 1, 3}), {-1, n * hv});
  } else {
    if (mask.defined() && (mask.shape()[2] != t || mask.shape()[3] != s))  // the op takes whole (T, S) masks
      mask = ops::multiply(mask, ctx.graph.constant(Tensor::full(Shape{1, 1, t, s}, 1.0, dtype)));
    context = ops::reshape(ops::dot_product_attention(q, k, v, mask, scale)[0], {-1, n * hv});
  }
  // Keras's "abcd,cde->abe" output projection of the (batch·T, N·H_v) context.
  const VariablePtr out_kernel = weight("attention_output/kernel");  // (N, H_v, out...)
  std::vector<std::int64_t> out(out_kernel->shape().dims().begin() + 2, out_kernel->shape().dims().end());
  const std::int64_t out_size = product(out);
  const SymbolicTensor w = ops::reshape(read(ctx, out_kernel), {n * hv, out_size});
  SymbolicTensor y = bias ? ops::dense(context, w, ops::reshape(read(ctx, weight("attention_output/bias")), {out_size}))
                          : ops::matmul(context, w);  // (batch·T, out_size)
  std::vector<std::int64_t> y_dims{-1, t};
  y_dims.insert(y_dims.end(), out.begin(), out.end());
  y = ops::reshape(y, y_dims);  // (batch, T, out...)
  if (return_attention_scores_) return {y, probabilities};
  return {y};
}

nlohmann::json MultiHeadAttention::get_config() const {
  nlohmann::json output_shape = nullptr;
  if (options_.output_shape.size() == 1) output_shape = options_.output_shape[0];
  else if (!options_.output_shape.empty()) output_shape = ints_to_json(options_.output_shape);
  // tf.keras writes the attention axes as given until built, then (1,) for (batch, time, features).
  nlohmann::json axes = nullptr;
  if (built()) axes = nlohmann::json::array({1});
  else if (!options_.attention_axes.empty()) axes = options_.attention_axes;
  const auto& shapes = *build_shapes_;
  auto shape = [&](std::size_t i) { return shapes.size() > i ? shape_to_json(shapes[i]) : nlohmann::json(nullptr); };
  return layer_config(*this, {{"num_heads", num_heads_},
                              {"key_dim", key_dim_},
                              {"value_dim", value_dim()},
                              {"dropout", options_.dropout},
                              {"use_bias", options_.use_bias},
                              {"output_shape", output_shape},
                              {"attention_axes", axes},
                              {"kernel_initializer", options_.kernel_initializer.get_config()},
                              {"bias_initializer", options_.bias_initializer.get_config()},
                              {"kernel_regularizer", options_.kernel_regularizer.get_config()},
                              {"bias_regularizer", options_.bias_regularizer.get_config()},
                              {"activity_regularizer", nullptr},
                              {"kernel_constraint", nullptr},
                              {"bias_constraint", nullptr},
                              {"query_shape", shape(0)},
                              {"key_shape", shape(2)},
                              {"value_shape", shape(1)},
                              {"softmax_robust_masking", false}});
}

LayerPtr MultiHeadAttention::from_config(const nlohmann::json& config) {
  ConfigReader r(config, "MultiHeadAttention");
  r.check_common();
  r.expect("use_gate", false, "gated attention (use_gate)");
  r.expect("sliding_window", nullptr, "sliding-window attention");
  r.expect("flash_attention", nullptr, "the flash_attention setting");
  // softmax_robust_masking (tf.keras) changes only how logits of fully masked rows round; either is read.
  MultiHeadAttentionOptions options{.value_dim = r.has("value_dim") ? r.integer("value_dim") : 0,
                                    .dropout = r.number("dropout", 0.0),
                                    .use_bias = r.boolean("use_bias", true),
                                    .output_shape = r.has("output_shape") ? r.ints("output_shape")
                                                                          : std::vector<std::int64_t>{},
                                    .kernel_initializer = r.initializer("kernel_initializer", "glorot_uniform"),
                                    .bias_initializer = r.initializer("bias_initializer", "zeros"),
                                    .kernel_regularizer = r.regularizer("kernel_regularizer"),
                                    .bias_regularizer = r.regularizer("bias_regularizer"),
                                    .name = r.name()};
  if (r.has("attention_axes"))
    for (std::int64_t a : r.ints("attention_axes")) options.attention_axes.push_back(r.axis(a, "attention_axes"));
  if (r.has("seed")) options.seed = static_cast<std::uint64_t>(r.integer("seed"));
  MultiHeadAttention layer(r.integer("num_heads"), r.integer("key_dim"), options);
  // tf.keras builds the layer from the shapes its config keeps.
  if (r.has("query_shape") && r.has("value_shape")) {
    std::vector<Shape> shapes{Shape(r.shape("query_shape")), Shape(r.shape("value_shape"))};
    shapes.push_back(r.has("key_shape") ? Shape(r.shape("key_shape")) : shapes[1]);
    layer.ensure_built(shapes);
  }
  return r.finish(std::move(layer));
}

}  // namespace tower::layers
