// MultiHeadAttention: Keras's multi-head scaled dot-product attention (Vaswani et al., 2017), with its
// weight names and layouts (the EinsumDense sublayers query, key, value, attention_output).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tower/layers/layer.h"

namespace tower::layers {

struct MultiHeadAttentionOptions {
  std::int64_t value_dim = 0;  // size of each head for the values; 0 (Keras's None): key_dim
  double dropout = 0.0;        // on the attention probabilities, in training
  bool use_bias = true;
  // The output's shape after (batch, T_q); empty (None): the query's last dimension. Keras's int is
  // one entry.
  std::vector<std::int64_t> output_shape;
  // Only Keras's default, attention over the sequence axis: empty (None), {1} or {-2}.
  std::vector<int> attention_axes;
  Initializer kernel_initializer = "glorot_uniform";
  Initializer bias_initializer = "zeros";
  Regularizer kernel_regularizer;
  Regularizer bias_regularizer;
  // The dropout masks' seed; unset draws one (tower::next_seed()), as Dropout.
  std::optional<std::uint64_t> seed;
  std::string name;
};

// Keras's call arguments besides query and value:
// mha(query, value, key=None, attention_mask=None, return_attention_scores=False, use_causal_mask=False).
struct MultiHeadAttentionCallArgs {
  KerasTensor key;             // (batch, T_v, d_k); undefined: value
  KerasTensor attention_mask;  // (batch, T_q, T_v) or (batch, num_heads, T_q, T_v): nonzero attends; undefined: none
  bool return_attention_scores = false;  // then a second output, the probabilities (batch, num_heads, T_q, T_v)
  bool use_causal_mask = false;          // query position i attends to key positions j <= i only
};

// query (batch, T_q, d_q), value (batch, T_v, d_v), key (batch, T_v, d_k) -> (batch, T_q, d_out),
// d_out = d_q or output_shape; known sequence lengths and feature sizes. Per head h: q_h = query ·
// W_q[:, h] + b_q[h] (likewise k_h, v_h), probabilities softmax(q_h k_h^T / sqrt(key_dim)) over the
// key axis, output sum_h (probabilities v_h) · W_o[h] + b_o.
//
// Calling. In a model: mha(query, value) or mha.call_multi(query, value, {.key, .attention_mask,
// .return_attention_scores, .use_causal_mask}) (two outputs with return_attention_scores), as Keras's
// keywords; mha.call_multi({query, value}) and ({query, value, key}) work too. The engine-level inputs
// are [query, value, key, attention_mask] in that order, the last two optional (key is value when only
// a mask is given); the two flags belong to the handle that makes the call (with_call_args), so each
// call of a model keeps its own.
//
// Masks, as Keras 3: the attention mask is the AND of the explicit one, the query's Keras mask (rows
// (batch, T_q, 1)), the value's and key's ((batch, 1, T_v)) and the causal one. Masked logits become
// -1e9 before the softmax (Keras's Softmax(mask)); a query row with every key masked gets uniform
// probabilities, except where Keras 3 goes through its Softmax layer (dropout > 0 or
// return_attention_scores), which zeroes the masked probabilities, so such a row gets zeros there too.
// The output's mask is the query's.
//
// Weights (Keras's order and names): query/kernel (d_q, num_heads, key_dim), query/bias (num_heads,
// key_dim), key/kernel (d_k, num_heads, key_dim), key/bias, value/kernel (d_v, num_heads, value_dim),
// value/bias (num_heads, value_dim), attention_output/kernel (num_heads, value_dim, output...),
// attention_output/bias (output...); no biases without use_bias.
class MultiHeadAttention : public Layer {
 public:
  MultiHeadAttention(std::int64_t num_heads, std::int64_t key_dim, const MultiHeadAttentionOptions& options = {});

  using Layer::call_multi;
  using Layer::operator();
  // Keras's mha(query, value, key=..., attention_mask=..., ...): one output (ValueError when
  // return_attention_scores asks for two: use call_multi).
  KerasTensor operator()(const KerasTensor& query, const KerasTensor& value,
                         const MultiHeadAttentionCallArgs& args = {}) const;
  // -> {output} or {output, attention scores}.
  std::vector<KerasTensor> call_multi(const KerasTensor& query, const KerasTensor& value,
                                      const MultiHeadAttentionCallArgs& args = {}) const;
  // A handle on this layer whose calls apply args' flags (key and attention_mask of args are not used):
  // for calling the engine-level call() directly.
  LayerPtr with_call_args(const MultiHeadAttentionCallArgs& args) const;

  // In model configs: the flags as the call's keyword arguments, value, key and attention_mask by keyword
  // (tf.keras 2's inbound nodes), and such a call read back (Keras 3's positional value too).
  nlohmann::json call_kwargs() const override;
  std::vector<std::string> input_keywords() const override { return {"value", "key", "attention_mask"}; }
  std::vector<KerasTensor> call_from_config(const std::vector<KerasTensor>& inputs,
                                            const std::map<std::string, KerasTensor>& keyword_inputs,
                                            const nlohmann::json& kwargs) const override;

  void build(const std::vector<Shape>& input_shapes) override;
  std::vector<SymbolicTensor> call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) override;
  std::shared_ptr<Layer> share() const override { return std::make_shared<MultiHeadAttention>(*this); }
  bool supports_masking() const override { return true; }  // the output keeps the query's mask
  // Keras's get_config() as tf.keras 2 writes it (query_shape, key_shape, value_shape once built;
  // softmax_robust_masking) and the layer a config of any Keras version describes (built when the
  // shapes are there, as tf.keras does).
  nlohmann::json get_config() const override;
  static LayerPtr from_config(const nlohmann::json& config);
  std::string class_name() const override { return "MultiHeadAttention"; }

  std::int64_t num_heads() const { return num_heads_; }
  std::int64_t key_dim() const { return key_dim_; }
  std::int64_t value_dim() const { return options_.value_dim > 0 ? options_.value_dim : key_dim_; }
  const MultiHeadAttentionOptions& options() const { return options_; }
  bool return_attention_scores() const { return return_attention_scores_; }
  bool use_causal_mask() const { return use_causal_mask_; }

 private:
  std::int64_t num_heads_;
  std::int64_t key_dim_;
  MultiHeadAttentionOptions options_;
  std::uint64_t seed_;
  // This handle's call flags (Keras's call arguments).
  bool return_attention_scores_ = false;
  bool use_causal_mask_ = false;
  // The query, value and key shapes build() saw, shared by every handle (tf.keras's config has them).
  std::shared_ptr<std::vector<Shape>> build_shapes_ = std::make_shared<std::vector<Shape>>();
};

}  // namespace tower::layers
